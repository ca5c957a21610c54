"""A forget reaches everything derived from the fact: episodes, workspace passages, job records,
review flags, daily logs, the keyword index, and the bytes of every file of the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ManualClock, StoreFactory

from agent_runtime.memory.bm25 import WorkspaceIndex
from agent_runtime.memory.maintenance import MaintenanceRunner, default_jobs, list_runs
from agent_runtime.memory.migrate import MemoryTooNew
from agent_runtime.memory.store import MemoryStore
from agent_runtime.memory.tools import MemoryTools
from agent_runtime.workspace.dailylog import append_daily
from agent_runtime.workspace.versioned import Workspace

FACT = "The user's locker code is 4512 at Quokka Gym"
NEEDLES = (b"Quokka", b"quokka", b"4512")


@pytest.fixture
def tools(store: MemoryStore, data_dir: Path) -> MemoryTools:
    return MemoryTools(store, WorkspaceIndex(data_dir / "workspace", refresh_interval_s=0))


def texts_of(found: dict[str, object]) -> str:
    return json.dumps(found)


def test_episodes_stating_the_fact_leave_recall(tools: MemoryTools) -> None:
    store = tools.store
    saved = store.save(FACT, source="user_stated")
    episode = store.add_episode(
        "2025-05-01T08:00:00Z",
        "2025-05-01T08:30:00Z",
        ["t1", "t2"],
        "We planned the week. The user said the locker code is 4512 at Quokka Gym. Then we booked a table.",
    )
    assert "4512" in texts_of(tools.memory_search("locker code Quokka"))
    store.forget(saved.fact_id or 0)
    assert "4512" not in texts_of(tools.memory_search("locker code Quokka"))
    [kept] = store.recent_episodes()
    assert kept.id == episode.id
    assert kept.summary == "We planned the week. (forgotten) Then we booked a table."
    assert [hit.episode.id for hit in store.search_episodes("booked a table")] == [episode.id]
    assert store.search_episodes("Quokka") == []
    assert store.missing_vectors() == 1  # its embedding is recomputed from the redacted text


def test_workspace_passages_stating_it_in_other_words_are_hidden_then_rewritten(
    tools: MemoryTools, data_dir: Path, clock: ManualClock
) -> None:
    Workspace(data_dir).write(
        "MEMORY.md",
        "# Memory\n\n- Gym: Quokka Gym, locker code 4512\n- The user's cat is Miso\n",
        "agent",
        "seed",
    )
    saved = tools.store.save(FACT, source="user_stated")
    tools.store.forget(saved.fact_id or 0)
    texts = [r["text"] for r in tools.memory_search("Quokka locker code cat Miso")["results"]]
    assert texts and not any("4512" in text for text in texts)
    assert any("Miso" in text for text in texts)
    runner = MaintenanceRunner(tools.store, data_dir, jobs=default_jobs(None), clock=clock.now)
    run = runner.run_now("consolidation")
    assert run.outcome.value == "ok"
    assert Workspace(data_dir).read("MEMORY.md") == "# Memory\n\n- The user's cat is Miso\n"
    assert "4512" not in json.dumps(run.model_dump(mode="json"))


def test_job_records_review_flags_and_claims_lose_the_text(
    store: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    line = {
        "id": "t1",
        "at": "2025-05-01T09:00:00.000Z",
        "role": "user",
        "content": "My locker code is 4512.",
    }
    history = data_dir / "history" / "2025-05-01.jsonl"
    history.write_text(json.dumps(line) + "\n")
    runner = MaintenanceRunner(store, data_dir, jobs=default_jobs(None), clock=clock.now)
    extracted = runner.run_now("extraction")
    assert any("4512" in change for change in extracted.changes)
    [fact] = store.list_facts()
    history.unlink()  # its source turn is gone: the review flags it, quoting it
    clock.advance(120)
    reviewed = runner.run_now("review")
    assert any("unsupported" in change for change in reviewed.changes)
    assert any("4512" in str(row[0]) for row in store.query("SELECT detail FROM review_items"))
    store.save("The user's spare locker code is 1111", source="operator", subject="user.spare_locker")
    claim = store.save(
        "The user's spare locker code is 4512 now", source="agent", subject="user.spare_locker"
    )
    assert claim.outcome.value == "contradiction"
    store.forget(fact.id)
    for run in list_runs(store, limit=10):
        assert "4512" not in json.dumps(run.model_dump(mode="json"))
    assert all("4512" not in str(row[0]) for row in store.query("SELECT detail FROM review_items"))
    assert [tuple(row) for row in store.query("SELECT text, status FROM contradictions")] == [
        ("(forgotten)", "dismissed")
    ]


def test_other_daily_log_lines_stating_it_are_redacted(tools: MemoryTools, data_dir: Path) -> None:
    saved = tools.memory_save(FACT, source="user_stated")
    path = append_daily(data_dir / "workspace", "operator", f"ok: noted that {FACT}")
    append_daily(data_dir / "workspace", "operator", "ok: booked the table")
    tools.memory_forget(saved["id"])
    log = path.read_text(encoding="utf-8")
    assert "4512" not in log and "Quokka" not in log
    assert "operator · (forgotten)" in log and "booked the table" in log


def test_the_keyword_index_keeps_no_row_or_term(store: MemoryStore) -> None:
    for number in range(30):
        store.save(f"Filler note {number} about the garden", category=f"misc {number}")
    saved = store.save(FACT, source="user_stated")
    store.forget(saved.fact_id or 0)
    assert store.query("SELECT rowid FROM fact_fts WHERE fact_fts MATCH 'quokka OR 4512'") == []
    blobs = b"".join(bytes(row[0]) for row in store.query("SELECT block FROM fact_fts_data"))
    assert b"quokka" not in blobs
    assert store.query("SELECT id FROM fact_fts_content WHERE c0 LIKE '%Quokka%'") == []


def test_no_file_of_the_store_holds_the_forgotten_bytes(tools: MemoryTools, data_dir: Path) -> None:
    store = tools.store
    for number in range(40):
        store.save(f"Filler note {number} about topic {number * 7}", category=f"misc {number}")
    saved = tools.memory_save(FACT, source="user_stated", category="personal")
    store.add_episode("2025-05-01T08:00:00Z", "2025-05-01T08:30:00Z", ["t1"], f"Smalltalk. {FACT}. Lunch.")
    store.search("locker code")  # an access-count update rewrites the row once more
    for number in range(40, 50):
        store.save(f"Filler note {number} about topic {number * 7}", category=f"misc {number}")

    def holding() -> list[str]:
        return sorted(
            f"{path.relative_to(data_dir)}: {needle.decode()}"
            for path in data_dir.rglob("*")
            if path.is_file()
            for needle in NEEDLES
            if needle in path.read_bytes()
        )

    assert any(name.startswith("memory.db") for name in holding())
    tools.memory_forget(saved["id"])
    assert holding() == []  # the store still open: memory.db, its -wal and -shm, the daily log
    store.close()
    assert holding() == []


def test_a_version_1_file_gains_the_barrier_fingerprints(open_store: StoreFactory, data_dir: Path) -> None:
    first = open_store()
    old = first.save("The user's locker code is 4512", source="user_stated")
    with first.transaction() as conn:
        conn.execute("ALTER TABLE barriers DROP COLUMN words")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    first.close()
    store = open_store()
    assert store.query("SELECT value FROM meta WHERE key = 'schema_version'")[0][0] == "2"
    store.forget(old.fact_id or 0)
    assert store.forgotten_matcher().states_forgotten("locker code: 4512")


def test_a_file_from_a_later_release_is_refused_and_left_untouched(
    open_store: StoreFactory, data_dir: Path
) -> None:
    first = open_store()
    first.save("The user's locker code is 4512", source="user_stated")
    with first.transaction() as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    first.close()
    files = sorted(data_dir.glob("memory.db*"))
    before = {f.name: f.read_bytes() for f in files}
    with pytest.raises(MemoryTooNew, match="schema version 99, newer than this runtime's"):
        open_store()
    assert {f.name: f.read_bytes() for f in sorted(data_dir.glob("memory.db*"))} == before


def test_job_records_lose_a_forgotten_fact_with_non_ascii_words(
    store: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    line = {
        "id": "t1",
        "at": "2025-05-01T09:00:00.000Z",
        "role": "user",
        "content": "My gym is Zürichsee Fit 77.",
    }
    (data_dir / "history" / "2025-05-01.jsonl").write_text(json.dumps(line) + "\n")
    runner = MaintenanceRunner(store, data_dir, jobs=default_jobs(None), clock=clock.now)
    assert any("Zürichsee" in change for change in runner.run_now("extraction").changes)
    [fact] = store.list_facts()
    store.forget(fact.id)
    assert all("Zürichsee" not in change for run in list_runs(store) for change in run.changes)

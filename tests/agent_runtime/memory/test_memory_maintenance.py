"""Maintenance jobs: each writes only its own artifact, checkpoints move only on success, run
records say what happened, triggers fire on turns and on schedule, and no job blocks a caller."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import ManualClock, SwitchableEmbedder

from agent_runtime.memory.jobs import JobSchedule, Outcome
from agent_runtime.memory.maintenance import MaintenanceRunner, default_jobs, list_runs, load_checkpoint
from agent_runtime.memory.models import FactSource, FactStatus, SaveOutcome
from agent_runtime.memory.store import MemoryStore
from agent_runtime.workspace.versioned import Workspace

MEMORY_MD = """# Memory

- [x] Send the contract to Ana
- Call the bank tomorrow about the mortgage
- The user's cat is Miso
- the user's cat is Miso.
- Renew the passport (done)

## Extracted facts
- The user's alarm code is 7731
"""


def add_turns(data_dir: Path, *turns: tuple[str, str, str], day: str = "2025-05-01") -> None:
    path = data_dir / "history" / f"{day}.jsonl"
    with path.open("a", encoding="utf-8") as out:
        for turn_id, role, content in turns:
            record = {"id": turn_id, "at": f"{day}T09:00:00.000Z", "role": role, "content": content}
            out.write(json.dumps(record) + "\n")


def runner_for(store: MemoryStore, data_dir: Path, clock: ManualClock, **options: Any) -> MaintenanceRunner:
    schedules = options.pop("schedules", None)
    return MaintenanceRunner(store, data_dir, jobs=default_jobs(schedules), clock=clock.now, **options)


def snapshot(store: MemoryStore, data_dir: Path) -> dict[str, object]:
    memory = data_dir / "workspace" / "MEMORY.md"
    return {
        "memory_md": memory.read_text() if memory.exists() else None,
        "facts": [
            tuple(row)
            for row in store.query("SELECT id, text, status, source, salience FROM facts ORDER BY id")
        ],
        "review": [
            tuple(row)
            for row in store.query("SELECT id, kind, target_ref, status FROM review_items ORDER BY id")
        ],
    }


@pytest.fixture
def seeded(store: MemoryStore, data_dir: Path) -> MemoryStore:
    Workspace(data_dir).write("MEMORY.md", MEMORY_MD, "agent", "seed")
    alarm = store.save("The user's alarm code is 7731", source="user_stated")
    store.forget(alarm.fact_id)  # type: ignore[arg-type]
    store.save("The user's shoe size is 42", source="user_stated", subject="user.shoe_size")
    store.save("The user's shoe size is 44", source="inferred", subject="user.shoe_size")
    add_turns(
        data_dir, ("t1", "user", "Remember that my locker code is 4512."), ("t2", "assistant", "Noted.")
    )
    add_turns(data_dir, ("t3", "user", "I live in Lyon. What time is it?"))
    return store


def test_extraction_promotes_user_statements_with_provenance(
    seeded: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    runner = runner_for(seeded, data_dir, clock)
    run = runner.run_now("extraction")
    assert run.outcome is Outcome.OK
    assert (run.trigger, run.input_from, run.input_to) == (
        "manual",
        "start",
        f"2025-05-01.jsonl@{(data_dir / 'history' / '2025-05-01.jsonl').stat().st_size}",
    )
    extracted = seeded.list_facts(source=FactSource.EXTRACTED)
    assert {(f.text, tuple(f.turn_ids), f.subject) for f in extracted} == {
        ("The user's locker code is 4512.", ("t1",), "user.locker code"),
        ("The user lives in Lyon.", ("t3",), "user.home"),
    }
    assert len(run.changes) == 2 and all(change.startswith("saved fact") for change in run.changes)

    # Nothing new: nothing done. New turns: only they are read.
    assert runner.run_now("extraction").detail == "no new turns"
    add_turns(data_dir, ("t4", "user", "My favourite editor is Helix."))
    third = runner.run_now("extraction")
    assert third.detail == "1 turns, 1 facts"
    assert seeded.list_facts(source=FactSource.EXTRACTED)[0].text == "The user's favourite editor is Helix."


def test_a_forgotten_fact_is_not_extracted_again(
    seeded: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    runner = runner_for(seeded, data_dir, clock)
    runner.run_now("extraction")
    locker = next(f for f in seeded.list_facts() if "locker" in f.text)
    seeded.forget(locker.id)

    # The user said it again, and the whole history is read once more from the start.
    add_turns(data_dir, ("t5", "user", "Remember that my locker code is 4512!"))
    with seeded.transaction() as conn:
        conn.execute("DELETE FROM job_checkpoints WHERE job = 'extraction'")
    run = runner.run_now("extraction")
    assert run.outcome is Outcome.OK
    assert any(change.startswith("blocked") and "locker" in change for change in run.changes)
    assert not any("locker" in f.text for f in seeded.list_facts())


def test_an_extracted_fact_never_overwrites_a_user_stated_one(
    store: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    store.save("The user lives in Paris", category="user", source="user_stated", subject="user.home")
    add_turns(data_dir, ("t1", "user", "I live in Lyon these days"))
    runner_for(store, data_dir, clock).run_now("extraction")
    assert [f.text for f in store.list_facts()] == ["The user lives in Paris"]
    assert [c.text for c in store.contradictions()] == ["The user lives in Lyon these days."]


def test_extraction_with_a_model_keeps_its_subjects_and_turns(
    store: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    add_turns(data_dir, ("t1", "user", "We ship the beta on June 3."), ("t2", "assistant", "Great."))
    prompts: list[str] = []

    def complete(prompt: str) -> str:
        prompts.append(prompt)
        return '```json\n[{"text": "The beta ships on 2025-06-03.", "category": "projects", "subject": "beta.ship_date", "turn_ids": ["t1", "t99"]}]\n```'

    run = runner_for(store, data_dir, clock, complete=complete, model="test").run_now("extraction")
    assert run.model == "test"
    assert "[t1] 2025-05-01T09:00:00.000Z user: We ship the beta on June 3." in prompts[0]
    fact = store.list_facts()[0]
    assert (fact.text, fact.subject, fact.category, fact.turn_ids) == (
        "The beta ships on 2025-06-03.",
        "beta.ship_date",
        "projects",
        ["t1"],
    )


def test_each_job_writes_only_its_own_artifact(
    seeded: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    runner = runner_for(seeded, data_dir, clock)
    expected_changes = {
        "extraction": {"facts"},
        "review": {"review"},
        "consolidation": {"memory_md"},
        "decay": {"facts"},
    }
    for job, changed in expected_changes.items():
        before = snapshot(seeded, data_dir)
        run = runner.run_now(job)
        assert run.outcome is Outcome.OK, run.detail
        after = snapshot(seeded, data_dir)
        assert {key for key in before if before[key] != after[key]} == changed, job
        assert load_checkpoint(seeded, job)  # each job has its own checkpoint now
    assert {row[0] for row in seeded.query("SELECT job FROM job_checkpoints")} == set(expected_changes)


def test_consolidation_tidies_memory_md(seeded: MemoryStore, data_dir: Path, clock: ManualClock) -> None:
    workspace = Workspace(data_dir)
    written = workspace.history("MEMORY.md")[-1].at.date()
    run = runner_for(seeded, data_dir, clock).run_now("consolidation")
    assert run.outcome is Outcome.OK and run.model is None
    text = workspace.read("MEMORY.md")
    assert "Send the contract" not in text and "passport" not in text  # resolved
    assert text.count("Miso") == 1  # merged
    assert "7731" not in text  # forgotten
    assert f"Call the bank {(written + timedelta(days=1)).isoformat()} about the mortgage" in text
    assert "## Extracted facts" in text
    assert workspace.history("MEMORY.md")[-1].author == "job"
    assert any(change.startswith("removed resolved") for change in run.changes)


def test_consolidation_with_a_model_still_gets_the_guarantees(
    seeded: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    def complete(prompt: str) -> str:
        assert "Today is 2025-05-01" in prompt
        assert "- The user's alarm code is 7731" in prompt.split("Remove these lines")[1]
        return "# Memory\n\n- Call the bank tomorrow\n- The user's cat is Miso\n- The user's alarm code is 7731\n"

    run = runner_for(seeded, data_dir, clock, complete=complete, model="m1").run_now("consolidation")
    assert run.model == "m1"
    assert (
        Workspace(data_dir).read("MEMORY.md")
        == "# Memory\n\n- Call the bank 2025-05-02\n- The user's cat is Miso\n"
    )


def test_an_unusable_model_answer_falls_back_to_the_deterministic_pass(
    seeded: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    run = runner_for(seeded, data_dir, clock, complete=lambda _prompt: "x" * 20_000, model="m1").run_now(
        "consolidation"
    )
    assert run.outcome is Outcome.OK and run.model is None
    assert run.detail.startswith("model answer unusable")
    assert "Send the contract" not in Workspace(data_dir).read("MEMORY.md")


def failing_model(_prompt: str) -> str:
    raise RuntimeError("model gateway unreachable")


@pytest.mark.parametrize(
    ("job", "complete"),
    [
        ("extraction", failing_model),
        ("extraction", lambda _prompt: "I found some facts for you!"),
        ("consolidation", failing_model),
    ],
)
def test_a_failed_run_moves_no_checkpoint_and_writes_nothing(
    seeded: MemoryStore, data_dir: Path, clock: ManualClock, job: str, complete: Any
) -> None:
    before = snapshot(seeded, data_dir)
    run = runner_for(seeded, data_dir, clock, complete=complete, model="m1").run_now(job)
    assert run.outcome is Outcome.FAILED
    assert run.detail
    assert load_checkpoint(seeded, job) == {}
    assert snapshot(seeded, data_dir) == before
    assert run.finished_at is not None


def test_review_fails_cleanly_when_memory_md_is_unreadable(
    seeded: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    memory = data_dir / "workspace" / "MEMORY.md"
    memory.unlink()
    memory.mkdir()
    run = runner_for(seeded, data_dir, clock).run_now("review")
    assert run.outcome is Outcome.FAILED and "IsADirectoryError" in run.detail
    assert load_checkpoint(seeded, "review") == {}
    assert seeded.query("SELECT COUNT(*) FROM review_items")[0][0] == 0


def test_consolidation_refuses_to_overwrite_a_concurrent_edit(
    seeded: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    workspace = Workspace(data_dir)

    def complete(_prompt: str) -> str:
        workspace.write("MEMORY.md", MEMORY_MD + "- A line the agent just added\n", "agent", "meanwhile")
        return "# Memory\n"

    run = runner_for(seeded, data_dir, clock, complete=complete, model="m1").run_now("consolidation")
    assert run.outcome is Outcome.FAILED and "changed while" in run.detail
    assert "A line the agent just added" in workspace.read("MEMORY.md")
    assert load_checkpoint(seeded, "consolidation") == {}


def test_a_job_past_its_time_limit_is_abandoned_without_writing(
    seeded: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    release = threading.Event()

    def slow(_prompt: str) -> str:
        release.wait(10)
        return '[{"text": "The user is a night owl", "turn_ids": ["t1"]}]'

    schedules = {"extraction": JobSchedule(time_limit_s=0.2)}
    runner = runner_for(seeded, data_dir, clock, complete=slow, model="m1", schedules=schedules)
    assert runner.start("extraction", "manual")
    assert runner.wait("extraction", 5)  # the supervisor returns at the limit
    run = list_runs(seeded, "extraction")[0]
    assert run.outcome is Outcome.TIMEOUT
    release.set()
    for thread in threading.enumerate():
        if thread.name == "memory-extraction-work":
            thread.join(5)
    assert list_runs(seeded, "extraction")[0].outcome is Outcome.TIMEOUT
    assert not any("night owl" in f.text for f in seeded.list_facts())
    assert load_checkpoint(seeded, "extraction") == {}


def test_tick_starts_due_jobs_without_waiting_for_them(
    store: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    started = threading.Event()
    release = threading.Event()

    def complete(_prompt: str) -> str:
        started.set()
        release.wait(10)
        return "[]"

    schedules = {"extraction": JobSchedule(after_turns=2, min_gap_s=0)}
    runner = runner_for(store, data_dir, clock, complete=complete, model="m1", schedules=schedules)
    add_turns(data_dir, ("t1", "user", "hello there"))
    assert runner.due() == []
    add_turns(data_dir, ("t2", "user", "I like long walks"))
    assert runner.due() == [("extraction", "turns")]

    assert runner.tick() == ["extraction"]  # returns while the job waits on its model
    assert started.wait(5)
    assert runner.running("extraction")
    assert runner.tick() == []  # no second run of a running job
    release.set()
    assert runner.wait("extraction", 5)
    run = list_runs(store, "extraction")[0]
    assert (run.outcome, run.trigger) == (Outcome.OK, "turns")
    assert runner.new_turns("extraction") == 0
    assert runner.due() == []


def test_schedules_count_from_the_last_run(store: MemoryStore, data_dir: Path, clock: ManualClock) -> None:
    runner = runner_for(store, data_dir, clock)
    assert runner.due() == []
    clock.advance(3600)
    assert runner.due() == [("extraction", "schedule")]
    runner.run_now("extraction", "schedule")
    assert runner.due() == []
    clock.advance(24 * 3600)
    assert {job for job, _ in runner.due()} == {"extraction", "consolidation", "review", "decay", "rotation"}


def test_decay_runs_once_per_pass(store: MemoryStore, data_dir: Path, clock: ManualClock) -> None:
    saved = store.save("The office is on Rue Verte", source="user_stated")
    runner = runner_for(store, data_dir, clock)
    runner.run_now("decay")
    runner.run_now("decay")
    assert store.get(saved.fact_id).salience == pytest.approx(0.95**2)  # type: ignore[union-attr]
    assert load_checkpoint(store, "decay")["passes"] == 2


def test_review_flags_and_clears(seeded: MemoryStore, data_dir: Path, clock: ManualClock) -> None:
    seeded.save("The user has a dentist appointment tomorrow", source="agent")
    seeded.save("The user enjoys jazz", source="extracted", turn_ids=["t-gone"])
    clock.advance(3 * 24 * 3600)
    runner = runner_for(seeded, data_dir, clock)
    run = runner.run_now("review")
    flags = {
        (row["kind"], row["target_kind"])
        for row in seeded.query("SELECT * FROM review_items WHERE status = 'open'")
    }
    assert flags == {
        ("contradicted", "fact"),
        ("stale", "fact"),
        ("unsupported", "fact"),
        ("forgotten", "key"),
        ("duplicate", "key"),
    }
    assert len(run.changes) == 5

    pending = seeded.contradictions()[0]
    seeded.resolve(pending.id, "old")
    run = runner.run_now("review")
    assert run.changes == [next(c for c in run.changes if c.startswith("closed contradicted"))]
    assert seeded.query("SELECT COUNT(*) FROM review_items WHERE status = 'open'")[0][0] == 4


def test_run_records_keep_trigger_model_and_range(
    store: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    add_turns(data_dir, ("t1", "user", "Call me Sam."))
    runner = runner_for(
        store,
        data_dir,
        clock,
        complete=lambda _p: '[{"text": "The user goes by Sam", "subject": "user.name"}]',
        model="m-small",
    )
    run = runner.run_now("extraction", "turns")
    assert (run.job, run.trigger, run.model, run.outcome) == ("extraction", "turns", "m-small", Outcome.OK)
    assert run.input_from == "start" and run.input_to.startswith("2025-05-01.jsonl@")
    assert run.changes == ["saved fact 1: The user goes by Sam"]
    assert store.get(1).turn_ids == ["t1"]  # type: ignore[union-attr]
    assert store.get(1).status is FactStatus.ACTIVE  # type: ignore[union-attr]
    assert SaveOutcome.SAVED.value in run.changes[0]


def test_tick_backfills_vectors_once_embeddings_are_back(
    store: MemoryStore, data_dir: Path, clock: ManualClock, embedder: SwitchableEmbedder
) -> None:
    embedder.down = True
    for text in ("The build server is Kestrel", "Backups run at 02:00", "The wiki lives on Notion"):
        store.save(text)
    runner = runner_for(store, data_dir, clock)
    assert "backfill" not in runner.tick()  # resting after three failures: no call
    embedder.down = False
    clock.advance(31)
    assert "backfill" in runner.tick()
    assert runner.wait("backfill", 10)
    assert store.status().missing_vectors == 0
    assert store.status().mode.value == "hybrid"

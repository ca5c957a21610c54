"""Reviews that are read: a flag raised by the review job is acted on by the next job, end to end."""

from __future__ import annotations

from pathlib import Path

from conftest import ManualClock

from agent_runtime.memory.maintenance import MaintenanceRunner, default_jobs
from agent_runtime.memory.models import FactStatus
from agent_runtime.memory.store import MemoryStore
from agent_runtime.workspace.versioned import Workspace


def open_flags(store: MemoryStore) -> list[tuple[str, str, str]]:
    rows = store.query("SELECT kind, target_kind, target_ref FROM review_items WHERE status = 'open'")
    return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]


def test_a_stale_fact_is_flagged_then_dated_by_extraction(
    store: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    runner = MaintenanceRunner(store, data_dir, jobs=default_jobs(None), clock=clock.now)
    saved = store.save("The dentist appointment is tomorrow at 10", source="user_stated", category="health")
    clock.advance(3 * 24 * 3600)
    runner.run_now("review")
    assert ("stale", "fact", str(saved.fact_id)) in open_flags(store)
    clock.advance(120)
    extraction = runner.run_now("extraction")
    assert extraction.outcome.value == "ok"
    old = store.get(saved.fact_id or 0)
    assert old is not None and old.status is FactStatus.SUPERSEDED and old.superseded_by is not None
    dated = store.get(old.superseded_by)
    assert dated is not None and dated.text == "The dentist appointment is 2025-05-02 at 10"
    assert dated.source is old.source and dated.category == "health"
    assert any(f"rewrote stale fact {saved.fact_id}" in change for change in extraction.changes)
    clock.advance(120)
    runner.run_now("review")
    assert open_flags(store) == []  # the flag no longer holds, and is closed


def test_a_memory_md_line_stating_a_replaced_fact_is_flagged_then_removed(
    store: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    workspace = Workspace(data_dir)
    workspace.write(
        "MEMORY.md", "# Memory\n\n- The user lives in Lyon\n- The user's cat is Miso\n", "agent", "seed"
    )
    store.save("The user lives in Lyon", source="user_stated", subject="user.home")
    store.save("The user lives in Rennes", source="user_stated", subject="user.home")
    runner = MaintenanceRunner(store, data_dir, jobs=default_jobs(None), clock=clock.now)
    runner.run_now("review")
    assert [flag[0] for flag in open_flags(store)] == ["stale"]
    clock.advance(120)
    consolidation = runner.run_now("consolidation")
    assert workspace.read("MEMORY.md") == "# Memory\n\n- The user's cat is Miso\n"
    assert any("removed flagged: The user lives in Lyon" in change for change in consolidation.changes)


def test_a_line_the_review_model_flags_stale_is_removed_by_consolidation(
    store: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    workspace = Workspace(data_dir)
    workspace.write(
        "MEMORY.md",
        "# Memory\n\n- The user's cat is Miso\n- The user is in Rome this week\n",
        "agent",
        "seed",
    )
    prompts: list[str] = []

    def reviewer(prompt: str) -> str:
        prompts.append(prompt)
        return '```json\n[{"line": 2, "kind": "stale", "reason": "the trip is over"}, {"line": 9, "kind": "stale"}]\n```'

    MaintenanceRunner(
        store, data_dir, jobs=default_jobs(None), clock=clock.now, complete=reviewer, model="review-model"
    ).run_now("review")
    assert "2. The user is in Rome this week" in prompts[0] and "Today is 2025-05-01" in prompts[0]
    assert [flag[0] for flag in open_flags(store)] == ["stale"]
    [run] = [r for r in store.query("SELECT model, detail FROM job_runs WHERE job = 'review'")]
    assert tuple(run) == ("review-model", "1 flags")
    clock.advance(120)
    MaintenanceRunner(store, data_dir, jobs=default_jobs(None), clock=clock.now).run_now("consolidation")
    assert workspace.read("MEMORY.md") == "# Memory\n\n- The user's cat is Miso\n"


def test_an_unusable_review_answer_leaves_the_heuristic_flags(
    store: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    Workspace(data_dir).write(
        "MEMORY.md", "# Memory\n\n- The cat is Miso\n- The cat is Miso\n", "agent", "seed"
    )
    runner = MaintenanceRunner(
        store, data_dir, jobs=default_jobs(None), clock=clock.now, complete=lambda _p: "I cannot tell."
    )
    run = runner.run_now("review")
    assert run.outcome.value == "ok" and run.detail.startswith("model answer unusable")
    assert [flag[0] for flag in open_flags(store)] == ["duplicate"]

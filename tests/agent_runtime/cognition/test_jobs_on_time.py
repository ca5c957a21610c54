"""Memory jobs run at their time without traffic: a job that never ran runs at its first slot
even when the agent restarts in between, the run record says `schedule`, the next due time of
every job is known without loading the memory store, and an idle agent starts its worker for a
due job only."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agent_runtime.cognition.runner import CognitionRunner
from agent_runtime.jobs_due import jobs_due, next_due_at
from agent_runtime.memory.maintenance import MaintenanceRunner
from agent_runtime.memory.models import MemoryConfig
from agent_runtime.memory.store import MemoryStore
from agent_runtime.process.agent import AgentProcess
from agent_runtime.process.settings import Settings
from agent_runtime.protocol import ContextSettings
from tests.agent_runtime.conftest import make_config, write_token

NIGHT = datetime(2026, 3, 2, 1, 0, tzinfo=UTC)
CHECKPOINT = ContextSettings.model_validate({"strategy": "checkpoint"})


def runner(data: Path, now: datetime) -> CognitionRunner:
    return CognitionRunner(data, CHECKPOINT, agent_model="test", clock=lambda: now)


def test_a_job_that_never_ran_runs_at_its_first_slot_across_restarts(tmp_path: Path) -> None:
    runner(tmp_path, NIGHT)  # first seen at 01:00
    # Restarted at 03:30 (an idle release, a new container): the 03:00 review slot has passed.
    later = NIGHT + timedelta(hours=2, minutes=30)
    after_restart = runner(tmp_path, later)
    assert ("review", "schedule") in after_restart.due()
    record = after_restart.run("review", "schedule")
    assert record.trigger == "schedule"
    assert ("review", "schedule") not in runner(tmp_path, later).due()
    due = {d.job: d.next_due for d in jobs_due(tmp_path, CHECKPOINT, later)}
    assert due["review"] == datetime(2026, 3, 2, 15, 0, tzinfo=UTC)
    assert due["consolidation"] == datetime(2026, 3, 2, 4, 0, tzinfo=UTC)
    assert due["extraction"] == datetime(2026, 3, 2, 5, 0, tzinfo=UTC)


def test_maintenance_jobs_count_from_the_first_start_not_the_last(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "memory.db", config=MemoryConfig(dimensions=8)) as store:
        MaintenanceRunner(store, tmp_path, clock=lambda: NIGHT)
        a_day_later = NIGHT + timedelta(days=1, minutes=1)
        restarted = MaintenanceRunner(store, tmp_path, clock=lambda: a_day_later)
        assert ("decay", "schedule") in restarted.due()
        assert restarted.run_now("decay", "schedule").trigger == "schedule"
    due = {d.job: d.next_due for d in jobs_due(tmp_path, ContextSettings(), a_day_later)}
    assert due["extraction"] == NIGHT + timedelta(hours=1)
    assert due["decay"] > a_day_later + timedelta(hours=23)


def test_an_idle_agent_starts_its_worker_only_when_a_job_is_due(tmp_path: Path) -> None:
    settings = Settings(orchestrator_url="http://127.0.0.1:9", agent="alpha", data_dir=tmp_path)
    write_token(tmp_path)
    process = AgentProcess(settings, threading.Event())
    process.config = make_config(context={"strategy": "checkpoint"})
    assert not process._memory_jobs_due()  # a fresh storage: nothing known yet
    runner(tmp_path, datetime.now(UTC) - timedelta(days=2))  # first seen two days ago, never run
    assert process._memory_jobs_due()
    assert process.state.snapshot().memory_due_at is not None
    for job in ("review", "consolidation", "extraction"):
        runner(tmp_path, datetime.now(UTC)).run(job, "schedule")
    assert not process._memory_jobs_due()
    due_at = next_due_at(tmp_path, CHECKPOINT, datetime.now(UTC))
    assert process.state.snapshot().memory_due_at == due_at

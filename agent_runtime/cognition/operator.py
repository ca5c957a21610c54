"""The operator's view of an agent's memory jobs: run records and checkpoints of the memory
store's maintenance jobs and of the `checkpoint` strategy's jobs, and running one now.

Job names are qualified by family (`maintenance/extraction`, `cognition/review`); a bare name
means the `cognition` job of that name when the agent runs the `checkpoint` strategy, and the
maintenance job otherwise.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agent_runtime.cognition.files import JOB_NAMES, CognitionFiles, CognitionRun
from agent_runtime.protocol import (
    ContextSettings,
    ContextStrategy,
    MemoryJobCheckpoint,
    MemoryJobDue,
    MemoryJobRun,
    MemoryJobs,
)

if TYPE_CHECKING:
    from agent_runtime.cognition.runner import CognitionRunner
    from agent_runtime.memory.jobs import JobRun
    from agent_runtime.memory.maintenance import MaintenanceRunner
    from agent_runtime.memory.store import MemoryStore

Family = Literal["maintenance", "cognition"]
MAINTENANCE_JOBS = ("extraction", "consolidation", "review", "decay", "rotation")


class UnknownJob(LookupError):
    pass


def job_names(strategy: ContextStrategy) -> list[str]:
    names = [f"maintenance/{job}" for job in MAINTENANCE_JOBS]
    if strategy == ContextStrategy.CHECKPOINT:
        names += [f"cognition/{job}" for job in JOB_NAMES]
    return names


def resolve(name: str, strategy: ContextStrategy) -> tuple[Family, str]:
    """(family, job) for a qualified or bare job name; UnknownJob names the choices."""
    family, _, job = name.rpartition("/")
    if not family:
        cognitive = strategy == ContextStrategy.CHECKPOINT and job in JOB_NAMES
        family = "cognition" if cognitive else "maintenance"
    qualified = f"{family}/{job}"
    if qualified not in job_names(strategy):
        raise UnknownJob(f"no memory job {name!r}; jobs: {', '.join(job_names(strategy))}")
    return ("cognition" if family == "cognition" else "maintenance"), job


def maintenance_view(run: JobRun) -> MemoryJobRun:
    return _job_run_view(run, "maintenance", run.changes)


def cognition_view(run: CognitionRun) -> MemoryJobRun:
    return _job_run_view(run, "cognition", run.files_changed)


def _job_run_view(
    run: JobRun | CognitionRun, family: Literal["maintenance", "cognition"], changes: list[str]
) -> MemoryJobRun:
    return MemoryJobRun(
        job=run.job,
        family=family,
        trigger=run.trigger,
        model=run.model,
        outcome=run.outcome.value,
        started_at=run.started_at,
        finished_at=run.finished_at,
        detail=run.detail,
        changes=changes,
    )


def memory_jobs(store: MemoryStore, data_dir: Path, settings: ContextSettings, limit: int = 50) -> MemoryJobs:
    from agent_runtime.jobs_due import jobs_due
    from agent_runtime.memory.maintenance import list_runs, load_checkpoint

    strategy = settings.strategy
    due = [
        MemoryJobDue(
            job=found.job,
            family="cognition" if found.family == "cognition" else "maintenance",
            next_due=found.next_due,
        )
        for found in jobs_due(data_dir, settings, datetime.now(UTC))
    ]
    files = CognitionFiles(data_dir)
    runs = [maintenance_view(run) for run in list_runs(store, None, limit)]
    runs += [cognition_view(run) for run in files.runs(None, limit)]
    runs.sort(key=lambda run: run.started_at, reverse=True)
    checkpoints = [
        MemoryJobCheckpoint(job=job, family="maintenance", value=value)
        for job in MAINTENANCE_JOBS
        if (value := load_checkpoint(store, job))
    ]
    checkpoints += [
        MemoryJobCheckpoint(job=job, family="cognition", value=value)
        for job in JOB_NAMES
        if (value := files.checkpoint(job))
    ]
    return MemoryJobs(
        strategy=strategy, jobs=job_names(strategy), due=due, checkpoints=checkpoints, runs=runs[:limit]
    )


def run_job(
    family: Family,
    job: str,
    maintenance: MaintenanceRunner,
    cognition: CognitionRunner | None,
) -> MemoryJobRun:
    """Run one job now and wait for its record."""
    if family == "cognition":
        if cognition is None:
            raise UnknownJob(f"cognition/{job} runs only with the checkpoint strategy")
        return cognition_view(cognition.run(job, "manual"))
    return maintenance_view(maintenance.run_now(job, "manual"))

"""Background maintenance of an agent's memory: jobs, their triggers, checkpoints and run records.

Jobs (each writes only its own artifact):
- `extraction`: promotes durable facts from the turns since its checkpoint into the store
  (source `extracted`, with their turn ids) -> facts in memory.db;
- `consolidation`: keeps MEMORY.md tidy and under its cap -> workspace/MEMORY.md;
- `review`: flags stale, unsupported or contradicted entries -> review_items in memory.db,
  which the other two read;
- `decay`: one pass of salience decay -> facts.salience in memory.db;
- `rotation`: the turn log kept bounded (old days compacted, then kept as episodes) -> history/.

A job (`agent_runtime.memory.jobs`) runs in two steps: `plan` reads its inputs and does the
slow work (a model call, the embeddings) without writing anything; the returned `JobPlan.write`
then writes the artifact, and the runner stores the new checkpoint and the run record in the same transaction. A plan
that raises, a write that fails, or a job that outlives its time limit leaves the artifact and
the checkpoint as they were, with a run record saying why.

Triggers: a count of new turns in history/ since the job's last success, and a schedule
(`every_s` since its last run). `MaintenanceRunner.tick()` starts due jobs in background
threads and returns at once, so maintenance never holds up a reply.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_runtime.jobs_due import MAINTENANCE_EVERY_S, MAINTENANCE_SINCE_KEY
from agent_runtime.memory.consolidation import ConsolidationJob
from agent_runtime.memory.extraction import ExtractionJob
from agent_runtime.memory.jobs import (
    JOB_ERRORS,
    Complete,
    Job,
    JobCancelled,
    JobContext,
    JobPlan,
    JobRun,
    JobSchedule,
    Outcome,
)
from agent_runtime.memory.records import iso, parse_time
from agent_runtime.memory.review import ReviewJob
from agent_runtime.memory.rotation import RotationJob
from agent_runtime.memory.store import MemoryStore
from agent_runtime.memory.turns import Position, count_exchanges, iter_turns

log = logging.getLogger(__name__)


class DecayJob(Job):
    name = "decay"
    artifact = "facts.salience in memory.db"

    def plan(self, ctx: JobContext) -> JobPlan:
        passes = int(ctx.checkpoint.get("passes", 0))
        factor = ctx.store.config.decay_factor

        def write() -> list[str]:
            return [f"salience x{factor} on {ctx.store.decay()} active facts"]

        return JobPlan(write=write, checkpoint={"passes": passes + 1, "at": iso(ctx.now())})


# Checkpoints and run records


def load_checkpoint(store: MemoryStore, job: str) -> dict[str, Any]:
    rows = store.query("SELECT value FROM job_checkpoints WHERE job = ?", (job,))
    if not rows:
        return {}
    value = json.loads(rows[0][0])
    return value if isinstance(value, dict) else {}


def _save_checkpoint(store: MemoryStore, job: str, value: dict[str, Any], now: str) -> None:
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO job_checkpoints(job, value, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT(job) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            (job, json.dumps(value, sort_keys=True), now),
        )


def _run_from_row(row: Any) -> JobRun:
    return JobRun(
        id=row["id"],
        job=row["job"],
        trigger=row["trigger"],
        model=row["model"],
        input_from=row["input_from"],
        input_to=row["input_to"],
        started_at=parse_time(row["started_at"]),
        finished_at=parse_time(row["finished_at"]) if row["finished_at"] else None,
        outcome=Outcome(row["outcome"]),
        detail=row["detail"],
        changes=json.loads(row["changes"]),
    )


def list_runs(store: MemoryStore, job: str | None = None, limit: int = 50) -> list[JobRun]:
    where, params = ("WHERE job = ?", (job, limit)) if job else ("", (limit,))
    rows = store.query(f"SELECT * FROM job_runs {where} ORDER BY id DESC LIMIT ?", params)
    return [_run_from_row(row) for row in rows]


DEFAULT_SCHEDULES: dict[str, JobSchedule] = {
    "extraction": JobSchedule(every_s=MAINTENANCE_EVERY_S["extraction"], after_turns=20),
    "consolidation": JobSchedule(every_s=MAINTENANCE_EVERY_S["consolidation"], after_turns=60),
    "review": JobSchedule(every_s=MAINTENANCE_EVERY_S["review"], after_turns=200, time_limit_s=120),
    "decay": JobSchedule(every_s=MAINTENANCE_EVERY_S["decay"], time_limit_s=60),
    "rotation": JobSchedule(every_s=MAINTENANCE_EVERY_S["rotation"], time_limit_s=120),
}


def default_jobs(schedules: dict[str, JobSchedule] | None = None) -> list[Job]:
    chosen = {**DEFAULT_SCHEDULES, **(schedules or {})}
    return [
        ExtractionJob(chosen["extraction"]),
        ConsolidationJob(chosen["consolidation"]),
        ReviewJob(chosen["review"]),
        DecayJob(chosen["decay"]),
        RotationJob(chosen["rotation"]),
    ]


@dataclass
class _Run:
    run_id: int
    ctx: JobContext
    lock: threading.Lock = field(default_factory=threading.Lock)
    writing: bool = False
    finished: bool = False


class MaintenanceRunner:
    """Starts due jobs in background threads; one run of a job at a time."""

    def __init__(
        self,
        store: MemoryStore,
        data_dir: Path,
        *,
        complete: Complete | None = None,
        model: str | None = None,
        jobs: list[Job] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.store = store
        self.data_dir = Path(data_dir)
        self.complete = complete
        self.model = model
        self.jobs = {job.name: job for job in (jobs if jobs is not None else default_jobs())}
        self._now = clock or (lambda: datetime.now(UTC))
        self._started_at = self._since()
        self._lock = threading.Lock()
        self._threads: dict[str, threading.Thread] = {}

    def _since(self) -> datetime:
        """When a runner first saw this store: a job that never ran counts from then, across
        restarts (`jobs_due`)."""
        rows = self.store.query("SELECT value FROM meta WHERE key = ?", (MAINTENANCE_SINCE_KEY,))
        if rows:
            return parse_time(str(rows[0][0]))
        now = self._now()
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", (MAINTENANCE_SINCE_KEY, iso(now))
            )
        return now

    # Triggers

    def _last_start(self, job: str) -> datetime | None:
        rows = self.store.query(
            "SELECT started_at FROM job_runs WHERE job = ? ORDER BY id DESC LIMIT 1", (job,)
        )
        return parse_time(rows[0][0]) if rows else None

    def new_turns(self, job: str, limit: int | None = None) -> int:
        """Exchanges (a person's or peer's message with its answer and tool calls) appended to
        history/ since the job's last success (counting stops at `limit`)."""
        mark = Position.from_json(load_checkpoint(self.store, job).get("turns"))
        return count_exchanges(self.data_dir / "history", mark, limit)

    def due(self) -> list[tuple[str, str]]:
        """(job, trigger) for every job that should start now."""
        now = self._now()
        found = []
        for name, job in self.jobs.items():
            schedule = job.schedule
            last = self._last_start(name)
            if last is not None and (now - last).total_seconds() < schedule.min_gap_s:
                continue
            since = (now - (last or self._started_at)).total_seconds()
            if schedule.every_s is not None and since >= schedule.every_s:
                found.append((name, "schedule"))
            elif (
                schedule.after_turns is not None
                and self.new_turns(name, schedule.after_turns) >= schedule.after_turns
            ):
                found.append((name, "turns"))
        return found

    def tick(self) -> list[str]:
        """Start every due job that is not already running, and a vector backfill when one is
        needed; returns the names started. Never waits for a job."""
        started = []
        for name, trigger in self.due():
            if self.start(name, trigger):
                started.append(name)
        if self.store.missing_vectors() and self.store.embeddings.available() and self.start_backfill():
            started.append("backfill")
        return started

    # Running

    def running(self, name: str) -> bool:
        with self._lock:
            thread = self._threads.get(name)
            return thread is not None and thread.is_alive()

    def start(self, name: str, trigger: str) -> bool:
        if name not in self.jobs:
            raise LookupError(f"no maintenance job {name!r}; jobs: {', '.join(self.jobs)}")
        with self._lock:
            thread = self._threads.get(name)
            if thread is not None and thread.is_alive():
                return False
            thread = threading.Thread(
                target=self._supervise, args=(self.jobs[name], trigger), name=f"memory-{name}", daemon=True
            )
            self._threads[name] = thread
            thread.start()
        return True

    def start_backfill(self) -> bool:
        with self._lock:
            thread = self._threads.get("backfill")
            if thread is not None and thread.is_alive():
                return False
            thread = threading.Thread(target=self.store.backfill_vectors, name="memory-backfill", daemon=True)
            self._threads["backfill"] = thread
            thread.start()
        return True

    def run_now(self, name: str, trigger: str = "manual") -> JobRun:
        """Run one job and wait for its record (the time limit still applies)."""
        if not self.start(name, trigger):
            raise RuntimeError(f"maintenance job {name!r} is already running")
        self.wait(name)
        return list_runs(self.store, name, 1)[0]

    def wait(self, name: str, timeout_s: float | None = None) -> bool:
        with self._lock:
            thread = self._threads.get(name)
        if thread is None:
            return True
        thread.join(timeout_s)
        return not thread.is_alive()

    def _begin(self, job: Job, trigger: str) -> _Run:
        ctx = JobContext(
            store=self.store,
            data_dir=self.data_dir,
            checkpoint=load_checkpoint(self.store, job.name),
            trigger=trigger,
            complete=self.complete,
            model=self.model,
            now=self._now,
        )
        with self.store.transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO job_runs(job, trigger, model, started_at, outcome) VALUES (?, ?, ?, ?, 'running')",
                (job.name, trigger, self.model if self.complete else None, iso(self._now())),
            )
        return _Run(int(cursor.lastrowid or 0), ctx)

    def _finish(
        self,
        run: _Run,
        outcome: Outcome,
        detail: str,
        plan: JobPlan | None = None,
        changes: list[str] | None = None,
    ) -> None:
        fields: dict[str, Any] = {"outcome": outcome.value, "detail": detail, "finished_at": iso(self._now())}
        if plan is not None:
            fields.update(input_from=plan.input_from, input_to=plan.input_to, model=plan.model)
        fields["changes"] = json.dumps(changes or [])
        assignments = ", ".join(f"{key} = ?" for key in fields)
        with self.store.transaction() as conn:
            conn.execute(f"UPDATE job_runs SET {assignments} WHERE id = ?", (*fields.values(), run.run_id))

    def _supervise(self, job: Job, trigger: str) -> None:
        run = self._begin(job, trigger)
        worker = threading.Thread(
            target=self._work, args=(job, run), name=f"memory-{job.name}-work", daemon=True
        )
        worker.start()
        worker.join(job.schedule.time_limit_s)
        with run.lock:
            if worker.is_alive() and not run.writing:
                run.ctx.cancelled.set()
                run.finished = True
                self._finish(
                    run, Outcome.TIMEOUT, f"stopped after {job.schedule.time_limit_s:g}s; nothing written"
                )
                return
        worker.join()

    def _work(self, job: Job, run: _Run) -> None:
        try:
            self._plan_and_write(job, run)
        finally:
            if not run.ctx.cancelled.is_set():
                # A no-op once the run has its record; otherwise the job raised something
                # unexpected (threading logs the traceback) and the record says so.
                self._close(run, Outcome.FAILED, "the job crashed; see the agent's log")

    def _plan_and_write(self, job: Job, run: _Run) -> None:
        try:
            plan = job.plan(run.ctx)
        except JobCancelled:
            return
        except JOB_ERRORS as failed:
            self._close(run, Outcome.FAILED, f"{type(failed).__name__}: {failed}")
            return
        with run.lock:
            if run.ctx.cancelled.is_set():
                return
            run.writing = True
        try:
            with self.store.transaction():
                changes = plan.write()
                checkpoint = {"turns": self._turn_mark(run.ctx).to_json(), **plan.checkpoint}
                _save_checkpoint(self.store, job.name, checkpoint, iso(self._now()))
                self._finish(run, Outcome.OK, plan.detail, plan, changes)
            run.finished = True
        except JOB_ERRORS as failed:
            self._close(run, Outcome.FAILED, f"{type(failed).__name__}: {failed}", plan)

    def _close(self, run: _Run, outcome: Outcome, detail: str, plan: JobPlan | None = None) -> None:
        with run.lock:
            if run.finished:
                return
            run.finished = True
        log.warning("memory job run %d %s: %s", run.run_id, outcome.value, detail)
        self._finish(run, outcome, detail, plan)

    def _turn_mark(self, ctx: JobContext) -> Position:
        """The position after the last turn on disk, read from the previous mark onwards."""
        mark = Position.from_json(ctx.checkpoint.get("turns"))
        for _, position in iter_turns(ctx.history_dir, mark):
            mark = position
        return mark

    # Periodic ticking, for hosts without their own loop

    def run_forever(self, stop: threading.Event, interval_s: float = 30.0) -> None:
        while not stop.wait(interval_s):
            try:
                self.tick()
            except JOB_ERRORS as failed:
                log.warning("memory maintenance tick failed: %s", failed)

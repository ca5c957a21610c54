"""Runs the `checkpoint` strategy's jobs: triggers, schedules, per-job models, run records.

A job is due when `after_turns` turns wait past its checkpoint, or when one of its times of day
(UTC) has passed since its last run. Jobs run one at a time in the order review, consolidation,
extraction, so the flags a review writes are read by the two others in the same round. A run
writes its artifact, then its checkpoint, then its record; a job that fails writes nothing and
leaves its checkpoint where it was.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from agent_runtime.cognition.files import JOB_NAMES, CognitionFiles, CognitionRun, RunOutcome
from agent_runtime.cognition.jobs import JOBS, Complete, JobInput, read_after
from agent_runtime.jobs_due import cognition_since, next_slot, parse_time
from agent_runtime.memory.turns import Position, count_exchanges
from agent_runtime.protocol import CognitionJobSettings, ContextSettings

log = logging.getLogger(__name__)
TEST_MODEL = "test"
ModelCall = Callable[[str], Complete]
# What a job's model call or its files may raise; anything else is a bug and is logged.
JOB_ERRORS: tuple[type[BaseException], ...] = (RuntimeError, OSError, ValueError, LookupError)


class CognitionRunner:
    def __init__(
        self,
        data_dir: Path,
        settings: ContextSettings,
        *,
        agent_model: str,
        model_call: ModelCall | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.files = CognitionFiles(data_dir)
        self.settings = settings
        self.agent_model = agent_model
        self.model_call = model_call
        self._now = clock or (lambda: datetime.now(UTC))
        # A job that never ran counts from when a runner first saw this storage, across restarts.
        self._started_at = cognition_since(self.files, self._now()) or self._now()
        self._lock = threading.Lock()
        self._run_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def job_settings(self, job: str) -> CognitionJobSettings:
        settings: CognitionJobSettings = getattr(self.settings.jobs, job)
        return settings

    def model_of(self, job: str) -> str | None:
        """The model a job calls; None when it runs its deterministic pass."""
        model = self.job_settings(job).model or self.agent_model
        return None if model == TEST_MODEL or self.model_call is None else model

    # Triggers

    def pending_turns(self, job: str, limit: int) -> int:
        """Exchanges past the job's checkpoint (a message, its answer and tool calls are one)."""
        mark = Position.from_json(self.files.checkpoint(job).get("position"))
        return count_exchanges(self.files.history_dir, mark, limit)

    def _scheduled(self, job: str, now: datetime) -> bool:
        """A time of day of the job has come since its last run (never run: since this storage
        was first seen)."""
        last_raw = self.files.checkpoint(job).get("ran_at")
        last = parse_time(last_raw) if isinstance(last_raw, str) else self._started_at
        slot = next_slot(list(self.job_settings(job).at), last)
        return slot is not None and slot <= now

    def due(self) -> list[tuple[str, str]]:
        now = self._now()
        found = []
        for job in JOB_NAMES:
            wanted = self.job_settings(job).after_turns
            if self.pending_turns(job, wanted) >= wanted:
                found.append((job, "turns"))
            elif self._scheduled(job, now):
                found.append((job, "schedule"))
        return found

    # Running

    def tick(self) -> list[str]:
        """Start the due jobs in a background thread, one after the other; their names."""
        due = self.due()
        if not due:
            return []
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return []
            self._thread = threading.Thread(
                target=self._run_all, args=(due,), name="cognition-jobs", daemon=True
            )
            self._thread.start()
        return [job for job, _ in due]

    def busy(self) -> bool:
        """True while a round of jobs runs in the background."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def wait(self, timeout_s: float | None = None) -> None:
        thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    def _run_all(self, due: list[tuple[str, str]]) -> None:
        for job, trigger in due:
            self.run(job, trigger)

    def run(self, job: str, trigger: str = "manual") -> CognitionRun:
        """Run one job now, in this thread, and return its record. Runs wait for each other:
        the operator's `memory run` and the background round never overlap."""
        if job not in JOBS:
            raise LookupError(f"no cognition job {job!r}; jobs: {', '.join(JOB_NAMES)}")
        with self._run_lock:
            return self._run(job, trigger)

    def _run(self, job: str, trigger: str) -> CognitionRun:
        started = self._now()
        checkpoint = self.files.checkpoint(job)
        model = self.model_of(job)
        turns, end = read_after(self.files, checkpoint)
        changed: list[str] = []
        new_checkpoint = dict(checkpoint)
        try:
            output = JOBS[job](
                JobInput(
                    files=self.files,
                    turns=turns,
                    end=end,
                    review=self.files.review(),
                    now=started,
                    complete=self.model_call(model) if model and self.model_call else None,
                    cap_bytes=self.settings.working_memory_bytes,
                )
            )
            for path, text in output.writes.items():
                if self.files.write(path, text):
                    changed.append(self.files.relative(path))
            new_checkpoint = {
                "position": end.to_json(),
                "last_turn_id": turns[-1].id if turns else checkpoint.get("last_turn_id"),
                "ran_at": started.isoformat(),
            }
            self.files.save_checkpoint(job, new_checkpoint)
            for applied in output.consumed:
                applied.unlink(missing_ok=True)
            outcome, detail = RunOutcome.OK, output.detail
        except JOB_ERRORS as failed:
            log.warning("cognition job %s failed: %s", job, failed)
            outcome, detail = RunOutcome.FAILED, f"{type(failed).__name__}: {failed}"
        record = CognitionRun(
            job=job,
            trigger=trigger,
            model=model,
            provider=(model.split(":", 1)[0] if model and ":" in model else None),
            started_at=started,
            finished_at=self._now(),
            outcome=outcome,
            detail=detail,
            input_turns=len(turns),
            files_changed=changed,
            checkpoint=new_checkpoint,
        )
        self.files.record(record)
        return record

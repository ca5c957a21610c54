"""When each memory job is next due by its schedule, read without loading the memory store.

An idle agent checks this about once a minute (`process.agent`), and reports the earliest time
in its check-ins so the orchestrator can wake it from hibernation for it; it starts its worker
only when a job is due. So only SQLite (`sqlite_driver`: the store's `job_runs` and
`meta` tables) and the checkpoint strategy's JSON checkpoints are read here.

A job that never ran counts from when its runner first saw this storage (kept on disk: the
store's `meta` row `maintenance_since`, the file `cognition/since`), not from the process's
start, so an agent that restarts often still runs it at its first slot.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

from agent_runtime import sqlite_driver
from agent_runtime.cognition.files import JOB_NAMES, CognitionFiles
from agent_runtime.context_settings import ContextSettings, ContextStrategy

MEMORY_DB = "memory.db"
MAINTENANCE_SINCE_KEY = "maintenance_since"
COGNITION_SINCE_FILE = "since"
# The memory store's maintenance jobs: seconds between runs, by default.
MAINTENANCE_EVERY_S: dict[str, float] = {
    "extraction": 3600.0,
    "consolidation": 6 * 3600.0,
    "review": 24 * 3600.0,
    "decay": 24 * 3600.0,
    "rotation": 24 * 3600.0,
}


@dataclass(frozen=True)
class JobDue:
    family: str
    job: str
    next_due: datetime


def parse_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def next_slot(slots: list[str], after: datetime) -> datetime | None:
    """The first of these times of day (UTC, "HH:MM") strictly after `after`."""
    found = []
    for slot in slots:
        hour, minute = (int(part) for part in slot.split(":"))
        moment = datetime.combine(after.date(), time(hour, minute), UTC)
        if moment <= after:
            moment += timedelta(days=1)
        found.append(moment)
    return min(found, default=None)


def cognition_since(files: CognitionFiles, now: datetime, *, create: bool = True) -> datetime | None:
    """When the checkpoint strategy's runner first saw this storage (set now when unknown)."""
    path = files.private_dir / COGNITION_SINCE_FILE
    raw = files.read(path).strip()
    if raw:
        try:
            return parse_time(raw)
        except ValueError:
            pass
    if not create:
        return None
    files.write(path, now.isoformat())
    return now


def cognition_due(data_dir: Path, settings: ContextSettings, now: datetime) -> list[JobDue]:
    """Next scheduled time of each checkpoint-strategy job (none without the strategy)."""
    if settings.strategy != ContextStrategy.CHECKPOINT:
        return []
    files = CognitionFiles(data_dir)
    since = cognition_since(files, now, create=False)
    found = []
    for job in JOB_NAMES:
        ran = files.checkpoint(job).get("ran_at")
        last = parse_time(ran) if isinstance(ran, str) else since
        if last is None:
            continue
        slot = next_slot(list(getattr(settings.jobs, job).at), last)
        if slot is not None:
            found.append(JobDue("cognition", job, slot))
    return found


def maintenance_due(data_dir: Path, every_s: dict[str, float] | None = None) -> list[JobDue]:
    """Next scheduled time of each maintenance job: its last start (or, never run, the first
    time its runner saw the store) plus its interval. None known without a store."""
    path = data_dir / MEMORY_DB
    if not path.is_file():
        return []
    intervals = every_s or MAINTENANCE_EVERY_S
    try:
        conn = sqlite_driver.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            since_row = conn.execute(
                "SELECT value FROM meta WHERE key = ?", (MAINTENANCE_SINCE_KEY,)
            ).fetchone()
            starts = dict(conn.execute("SELECT job, MAX(started_at) FROM job_runs GROUP BY job").fetchall())
        finally:
            conn.close()
    except sqlite_driver.Error:
        return []
    since = parse_time(str(since_row[0])) if since_row else None
    found = []
    for job, seconds in intervals.items():
        raw = starts.get(job)
        last = parse_time(str(raw)) if raw else since
        if last is not None:
            found.append(JobDue("maintenance", job, last + timedelta(seconds=seconds)))
    return found


def jobs_due(data_dir: Path, settings: ContextSettings, now: datetime) -> list[JobDue]:
    """Every job's next scheduled time, soonest first."""
    found = maintenance_due(data_dir) + cognition_due(data_dir, settings, now)
    return sorted(found, key=lambda due: due.next_due)


def next_due_at(data_dir: Path, settings: ContextSettings, now: datetime) -> datetime | None:
    found = jobs_due(data_dir, settings, now)
    return found[0].next_due if found else None

"""Backups the orchestrator takes on its own (fleet.yaml `backup:`), with retention.

The next one is due `every` after the newest scheduled backup in the folder, so a restarted
orchestrator neither repeats one nor catches up on missed ones in a burst. After each backup
the oldest are deleted until `keep` remain. Each outcome is an event (`backup.taken`,
`backup.failed`), which alert rules can match.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.backup.archive import BackupRefused, BackupResult, FleetSources, take_backup
from orchestrator.backup.snapshot import AskAgent
from orchestrator.backup.stopped_agents import StoppedSnapshots
from orchestrator.config.backup import BackupSchedule

log = logging.getLogger(__name__)

IDLE_CHECK_S = 60.0
# The agents of a fleet that just started connect first; a backup taken before would be incomplete.
FIRST_CHECK_AFTER_S = 30.0
RETRY_AFTER_FAILURE_S = 600.0
EVENT_TAKEN = "backup.taken"
EVENT_FAILED = "backup.failed"


def backup_folder(schedule: BackupSchedule, fleet_file: Path) -> Path:
    folder = Path(schedule.dir).expanduser()
    return folder if folder.is_absolute() else fleet_file.resolve().parent / folder


def scheduled_name(fleet: str, at: datetime) -> str:
    return f"flotilla-backup-{fleet}-{at.strftime('%Y%m%dT%H%M%S.%fZ')}.tar"


def scheduled_backups(folder: Path, fleet: str) -> list[Path]:
    """The folder's scheduled backups of this fleet, oldest first (their names sort by time)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(f"flotilla-backup-{fleet}-*.tar") if p.is_file())


def prune(folder: Path, fleet: str, keep: int) -> list[Path]:
    """Delete the oldest scheduled backups beyond `keep`; the ones deleted."""
    found = scheduled_backups(folder, fleet)
    gone = found[: max(0, len(found) - keep)]
    for path in gone:
        path.unlink(missing_ok=True)
    return gone


def seconds_until_due(schedule: BackupSchedule, folder: Path, fleet: str, now: float) -> float:
    found = scheduled_backups(folder, fleet)
    if not found:
        return 0.0
    return max(0.0, found[-1].stat().st_mtime + schedule.every_s - now)


class ScheduledBackups:
    def __init__(
        self,
        schedule_of: Callable[[], BackupSchedule | None],
        sources_of: Callable[[], FleetSources],
        ask: AskAgent,
        publish: Callable[..., Any],
        stopped: StoppedSnapshots | None = None,
    ) -> None:
        self._schedule_of = schedule_of
        self._sources_of = sources_of
        self._ask = ask
        self._publish = publish
        self._stopped = stopped

    async def run(self) -> None:
        await asyncio.sleep(FIRST_CHECK_AFTER_S)
        while True:
            schedule = self._schedule_of()
            if schedule is None:
                await asyncio.sleep(IDLE_CHECK_S)
                continue
            sources = self._sources_of()
            folder = backup_folder(schedule, sources.fleet_file)
            wait = seconds_until_due(schedule, folder, sources.fleet, time.time())
            if wait > 0:
                # Woken at least every minute, so a changed schedule takes effect.
                await asyncio.sleep(min(wait, IDLE_CHECK_S))
                continue
            if await self.take(schedule) is None:
                # Not retried at once: a full disk must not turn into a loop of attempts.
                await asyncio.sleep(min(schedule.every_s, RETRY_AFTER_FAILURE_S))

    async def take(self, schedule: BackupSchedule) -> BackupResult | None:
        sources = self._sources_of()
        folder = backup_folder(schedule, sources.fleet_file)
        output = folder / scheduled_name(sources.fleet, datetime.now(UTC))
        try:
            folder.mkdir(parents=True, exist_ok=True)
            result = await take_backup(sources, self._ask, output, stopped=self._stopped)
        except (BackupRefused, OSError) as failed:
            log.warning("scheduled backup into %s failed: %s", folder, failed)
            self._publish(EVENT_FAILED, path=str(output), error=str(failed))
            return None
        removed = prune(folder, sources.fleet, schedule.keep)
        incomplete = [part.name for part in result.agents if not part.complete]
        self._publish(
            EVENT_TAKEN,
            path=result.path,
            size=result.size,
            seconds=result.seconds,
            incomplete=incomplete,
            removed=[p.name for p in removed],
        )
        return result

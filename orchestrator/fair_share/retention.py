"""Retention of what the orchestrator stores for agents (fleet.yaml `limits.retention`), applied
while it runs: events, the broker's message log, finished inbox items and run records by age and
by size per agent; the model usage ledger's per-call rows once no budget window reads them (their
daily totals stay); alerts sent or given up, and decided approval items, as long as events.

Each table's owner prunes its own rows (`prune`); this module only decides when and with which
rule. Freed pages are reused by SQLite, so state.db stops growing once every agent is at its
bound; the write-ahead log is checkpointed after each pass so that it does not keep a flood's
pages either.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from pydantic import BaseModel

from agent_runtime.protocol import utcnow
from orchestrator.config.fair_share import RetentionConfig
from orchestrator.state.db import Database

log = logging.getLogger(__name__)


class Prunable(Protocol):
    def prune(self, before: datetime, size_per_agent: int, /) -> int: ...


class DetailPrunable(Protocol):
    def prune_detail(self, before: datetime, /) -> int: ...


class AgePrunable(Protocol):
    def prune(self, before: datetime, /) -> int: ...


class RetentionReport(BaseModel):
    """What one pass dropped, by kind of record."""

    at: datetime
    events: int = 0
    messages: int = 0
    inbox: int = 0
    runs: int = 0
    usage_detail: int = 0
    alerts: int = 0
    approvals: int = 0

    @property
    def total(self) -> int:
        return (
            self.events
            + self.messages
            + self.inbox
            + self.runs
            + self.usage_detail
            + self.alerts
            + self.approvals
        )


@dataclass(frozen=True)
class RetentionTargets:
    """The owners whose tables are pruned."""

    events: Prunable
    messages: Prunable
    inbox: Prunable
    runs: Prunable
    ledger: DetailPrunable
    alerts: AgePrunable
    approvals: AgePrunable


class _InboxPruner:
    def __init__(self, inbox: _FinishedPrunable) -> None:
        self._inbox = inbox

    def prune(self, before: datetime, size_per_agent: int, /) -> int:
        return self._inbox.prune_finished(before, size_per_agent)


class _FinishedPrunable(Protocol):
    def prune_finished(self, before: datetime, size_per_agent: int, /) -> int: ...


def inbox_target(inbox: _FinishedPrunable) -> Prunable:
    return _InboxPruner(inbox)


class Retention:
    def __init__(
        self,
        db: Database,
        rules: Callable[[], RetentionConfig],
        targets: RetentionTargets,
        now: Callable[[], datetime] = utcnow,
    ) -> None:
        self._db = db
        self._rules = rules
        self._targets = targets
        self._now = now
        self.last: RetentionReport | None = None

    def apply(self) -> RetentionReport:
        """One pass of every rule."""
        rules, now, targets = self._rules(), self._now(), self._targets
        report = RetentionReport(
            at=now,
            events=targets.events.prune(now - timedelta(seconds=rules.events.age_s), rules.events.size_bytes),
            messages=targets.messages.prune(
                now - timedelta(seconds=rules.messages.age_s), rules.messages.size_bytes
            ),
            inbox=targets.inbox.prune(now - timedelta(seconds=rules.inbox.age_s), rules.inbox.size_bytes),
            runs=targets.runs.prune(now - timedelta(seconds=rules.runs.age_s), rules.runs.size_bytes),
            usage_detail=targets.ledger.prune_detail(now - timedelta(seconds=rules.usage_detail_s)),
            # Alerts come from events: they are kept as long as events are.
            alerts=targets.alerts.prune(now - timedelta(seconds=rules.events.age_s)),
            # Approval items are announced by events; the decided ones go with them.
            approvals=targets.approvals.prune(now - timedelta(seconds=rules.events.age_s)),
        )
        if report.total:
            # Hand the pages back to the main file, so a flood's write-ahead log does not stay.
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            log.info("retention dropped %d records: %s", report.total, report.model_dump(exclude={"at"}))
        self.last = report
        return report

    async def run(self) -> None:
        """Apply the rules every `limits.retention.every` until cancelled."""
        while True:
            try:
                await asyncio.to_thread(self.apply)
            except sqlite3.OperationalError as failed:
                # A full disk or a busy database: the next pass tries again.
                log.warning("retention pass failed: %s", failed)
            await asyncio.sleep(self._rules().every_s)

"""When an agent's heartbeat ticks: a fixed interval or a cron expression in a time zone, shifted
by a per-agent jitter that is the same on every run (so restarts do not move the slots)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter

from orchestrator.config.models import HeartbeatConfig
from orchestrator.config.units import parse_duration

DEFAULT_EVERY = "15m"
# A slot is "missed" (rather than merely late) when it is this late or more: half its interval,
# at most a minute. Normal scheduling lag is milliseconds.
MAX_GRACE_S = 60.0
# Past this many missed cron slots we stop counting them one by one.
MAX_COUNTED_SLOTS = 10_000
_EPSILON = timedelta(microseconds=1)


def cron_next(expr: str, tz: ZoneInfo, after: datetime, inclusive: bool = False) -> datetime:
    """The first occurrence of `expr` (in `tz`) strictly after `after` (or at it, if inclusive)."""
    start = after.astimezone(tz) - (_EPSILON if inclusive else timedelta(0))
    found: datetime = croniter(expr, start).get_next(datetime)
    return found


def cron_prev(expr: str, tz: ZoneInfo, at_or_before: datetime) -> datetime:
    """The last occurrence of `expr` (in `tz`) at or before the given time."""
    # croniter excludes its start time; nudging it forward makes an exact hit count.
    start = at_or_before.astimezone(tz) + _EPSILON
    found: datetime = croniter(expr, start).get_prev(datetime)
    return found


def jitter_offset(fleet: str, agent: str, jitter_s: float) -> float:
    """A stable offset in [0, jitter_s) derived from the agent's name."""
    if jitter_s <= 0:
        return 0.0
    digest = hashlib.sha256(f"{fleet}/{agent}".encode()).hexdigest()
    return int(digest[:12], 16) / float(16**12) * jitter_s


@dataclass(frozen=True)
class CatchUp:
    """The slots that came due between a stored next-run time and now."""

    count: int
    latest: datetime
    next_slot: datetime

    @property
    def interval_s(self) -> float:
        return (self.next_slot - self.latest).total_seconds()


@dataclass(frozen=True)
class Cadence:
    every_s: float | None
    cron: str | None
    tz: ZoneInfo
    offset_s: float
    key: str

    @classmethod
    def of(cls, config: HeartbeatConfig, fleet: str, agent: str) -> Cadence:
        jitter_s = parse_duration(config.jitter) if config.jitter else 0.0
        every = config.every if config.cron is None else None
        every = every or (DEFAULT_EVERY if config.cron is None else None)
        key = json.dumps([every, config.cron, config.tz, config.jitter])
        return cls(
            every_s=parse_duration(every) if every else None,
            cron=config.cron,
            tz=ZoneInfo(config.tz),
            offset_s=jitter_offset(fleet, agent, jitter_s),
            key=key,
        )

    @property
    def _offset(self) -> timedelta:
        return timedelta(seconds=self.offset_s)

    def describe(self) -> str:
        if self.cron is not None:
            return f'cron "{self.cron}" {self.tz.key}'
        return f"every {self.every_s:g}s"

    def first_slot(self, now: datetime) -> datetime:
        """The first tick for an agent seen for the first time (or whose schedule changed)."""
        if self.every_s is not None:
            return now + self._offset
        assert self.cron is not None
        return cron_next(self.cron, self.tz, now - self._offset, inclusive=True) + self._offset

    def after(self, slot: datetime) -> datetime:
        if self.every_s is not None:
            return slot + timedelta(seconds=self.every_s)
        assert self.cron is not None
        return cron_next(self.cron, self.tz, slot - self._offset) + self._offset

    def catch_up(self, slot: datetime, now: datetime) -> CatchUp:
        """Given a due slot (slot <= now): how many slots are due, the latest, and the next one."""
        if self.every_s is not None:
            every = timedelta(seconds=self.every_s)
            steps = int((now - slot) / every)
            latest = slot + steps * every
            return CatchUp(count=steps + 1, latest=latest, next_slot=latest + every)
        count, latest = 1, slot
        following = self.after(slot)
        while following <= now and count < MAX_COUNTED_SLOTS:
            count, latest, following = count + 1, following, self.after(following)
        if following <= now:
            assert self.cron is not None
            latest = cron_prev(self.cron, self.tz, now - self._offset) + self._offset
            following = self.after(latest)
        return CatchUp(count=count, latest=latest, next_slot=following)

    @staticmethod
    def grace_s(catch_up: CatchUp) -> float:
        return min(MAX_GRACE_S, catch_up.interval_s / 2)

"""Which events and states make an alert: pure evaluation, no I/O.

Budget, dead-letter and plain event rules fire on one event. A crash loop is a count of
restarts inside a window. "Unhealthy" needs time: it starts with an `agent.unhealthy` event and
fires when the agent has still not checked in `for` later.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from orchestrator.config.alerts import AlertRule, AlertsConfig
from orchestrator.config.units import parse_duration
from orchestrator.events import Event, EventType

DEAD_LETTER_EVENT = "message.dead_lettered"
NOTIFICATION_FAILED_EVENT = "notification.failed"
# A warning rule means "at 80 % or more": spend that jumps past 100 % at once (or a first call
# refused) publishes only `budget.exhausted`, which is past 80 % too.
_EVENTS_OF_CONDITION = {
    "notification_failed": (NOTIFICATION_FAILED_EVENT,),
    "budget_warning": (EventType.BUDGET_WARNING.value, EventType.BUDGET_EXHAUSTED.value),
    "budget_exhausted": (EventType.BUDGET_EXHAUSTED.value,),
    "dead_letter": (DEAD_LETTER_EVENT,),
    "disk_full": (EventType.AGENT_DISK_FULL.value,),
}


@dataclass(frozen=True)
class Firing:
    """One alert to deliver: `key` identifies it for de-duplication (rule, condition, agent)."""

    rule_index: int
    title: str
    agent: str | None
    summary: str
    at: datetime
    detail: dict[str, Any] = field(default_factory=dict)
    resolved: bool = False
    """The condition a firing of this key raised is over (an unhealthy agent checks in again)."""

    @property
    def key(self) -> str:
        return f"{self.rule_index}:{self.title}:{self.agent or '*'}" + (":resolved" if self.resolved else "")


def _applies(rule: AlertRule, agent: str | None) -> bool:
    return not rule.agents or agent in rule.agents


def _summary(event: Event) -> str:
    data = event.data
    who = event.agent or "the fleet"
    if event.type in (EventType.BUDGET_WARNING, EventType.BUDGET_EXHAUSTED):
        share = 100 * float(data.get("fraction", 0))
        return f"{who} has used {share:.0f}% of its {data.get('kind', 'budget')} budget ({data.get('scope')})"
    if event.type == DEAD_LETTER_EVENT:
        return f"a message to {who} was dead-lettered after {data.get('attempts', '?')} attempts"
    if event.type == EventType.AGENT_DISK_FULL:
        return (
            f"the disk of {who} is full ({data.get('free_bytes', '?')} bytes free): it answers but "
            "keeps no record of its work until space is freed"
        )
    if event.type == EventType.STATE_DAMAGED:
        return (
            f"the fleet's state.db {data.get('path')} is damaged ({data.get('problem')}): writes are "
            "refused; stop the fleet and restore the last backup"
        )
    if event.type == NOTIFICATION_FAILED_EVENT:
        return (
            f"a notification from {who} to channel {data.get('channel')} failed after "
            f"{data.get('attempts', '?')} attempts: {data.get('error', '')}"
        )
    return f"{event.type} for {who}"


class AlertEvaluator:
    """Turns events (in order) and periodic ticks into firings."""

    def __init__(self, config: AlertsConfig) -> None:
        self._rules = list(enumerate(config.rules))
        self._restarts: dict[tuple[int, str], deque[datetime]] = defaultdict(deque)
        self._unhealthy_since: dict[str, datetime] = {}
        self._unhealthy_fired: dict[str, set[int]] = defaultdict(set)
        """Agents an unhealthy rule fired for, by rule: told `resolved` once they check in."""
        self._looping: set[tuple[int, str]] = set()
        """(rule, agent) a crash-loop rule fired for: told `resolved` after `within` without the
        restarts that would fire it (checked from the tick after the one that fired it)."""
        self._started_looping: set[tuple[int, str]] = set()

    def on_event(self, event: Event) -> list[Firing]:
        if event.type == EventType.AGENT_UNHEALTHY and event.agent:
            self._unhealthy_since.setdefault(event.agent, event.at)
        fired = []
        for index, rule in self._rules:
            if not _applies(rule, event.agent):
                continue
            if rule.when == "crash_loop":
                firing = self._crash_loop(index, rule, event)
            elif rule.when == "disk_full" and event.type == EventType.AGENT_DISK_FREED:
                summary = f"the disk of {event.agent} has room again"
                firing = Firing(index, rule.title, event.agent, summary, event.at, resolved=True)
            elif self._matches(rule, event):
                firing = Firing(index, rule.title, event.agent, _summary(event), event.at, dict(event.data))
            else:
                firing = None
            if firing is not None:
                fired.append(firing)
        return fired

    @staticmethod
    def _matches(rule: AlertRule, event: Event) -> bool:
        if rule.when == "event":
            return event.type == rule.event
        return event.type in _EVENTS_OF_CONDITION.get(rule.when, ())

    def _crash_loop(self, index: int, rule: AlertRule, event: Event) -> Firing | None:
        if event.type != EventType.AGENT_RESTARTED or not event.agent:
            return None
        window = timedelta(seconds=parse_duration(rule.within))
        times = self._restarts[(index, event.agent)]
        times.append(event.at)
        while times and event.at - times[0] > window:
            times.popleft()
        if len(times) < rule.restarts:
            return None
        self._started_looping.add((index, event.agent))
        summary = f"{event.agent} restarted {len(times)} times within {rule.within}"
        return Firing(index, rule.title, event.agent, summary, event.at, {"restarts": len(times)})

    def on_tick(self, now: datetime, checking_in: Callable[[str], bool]) -> list[Firing]:
        """Unhealthy agents that have not recovered `for` after their first unhealthy event; crash
        loops and unhealthy agents that are over."""
        fired = self._loops_over(now)
        for agent, since in list(self._unhealthy_since.items()):
            if checking_in(agent):
                del self._unhealthy_since[agent]
                fired += self._recovered(agent, since, now)
                continue
            for index, rule in self._rules:
                if rule.when != "unhealthy" or not _applies(rule, agent):
                    continue
                if now - since >= timedelta(seconds=parse_duration(rule.for_)):
                    minutes = (now - since).total_seconds() / 60
                    summary = f"{agent} has not checked in for {minutes:.0f} min"
                    fired.append(Firing(index, rule.title, agent, summary, now, {"since": since.isoformat()}))
                    self._unhealthy_fired[agent].add(index)
        return fired

    def _loops_over(self, now: datetime) -> list[Firing]:
        over = []
        for index, agent in sorted(self._looping):
            rule = self._rules[index][1]
            times = self._restarts[(index, agent)]
            window = timedelta(seconds=parse_duration(rule.within))
            while times and now - times[0] > window:
                times.popleft()
            if len(times) < rule.restarts:
                self._looping.discard((index, agent))
                summary = f"{agent} restarted {len(times)} times within the last {rule.within}"
                over.append(Firing(index, rule.title, agent, summary, now, {"restarts": len(times)}, True))
        self._looping |= self._started_looping
        self._started_looping = set()
        return over

    def _recovered(self, agent: str, since: datetime, now: datetime) -> list[Firing]:
        minutes = (now - since).total_seconds() / 60
        summary = f"{agent} checks in again (after {minutes:.0f} min)"
        return [
            Firing(
                index, self._rules[index][1].title, agent, summary, now, {"since": since.isoformat()}, True
            )
            for index in sorted(self._unhealthy_fired.pop(agent, set()))
        ]

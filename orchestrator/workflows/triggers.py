"""What starts runs besides the operator: a workflow's schedule (`every`, `cron`), events of a
type, and verified requests to a hook (its `hook.received` event). A schedule's last start is in state.db, so the ticks missed while the orchestrator was down
coalesce into one run at the next pass (as heartbeats do by default)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from orchestrator.config.units import parse_duration
from orchestrator.config.workflows import TriggerConfig
from orchestrator.events import Event
from orchestrator.fleet.view import FleetView
from orchestrator.scheduler.cadence import cron_next
from orchestrator.workflows.engine import WorkflowEngine, WorkflowRefused

log = logging.getLogger(__name__)

UTC_ZONE = ZoneInfo("UTC")
# Events of workflows never start one: a workflow triggered by its own events would loop.
OWN_EVENTS = "workflow."
HOOK_RECEIVED = "hook.received"


class WorkflowTriggers:
    def __init__(self, engine: WorkflowEngine, fleet: FleetView, now: Callable[[], datetime]) -> None:
        self._engine = engine
        self._fleet = fleet
        self._now = now

    def start_due(self) -> list[str]:
        """Start a run of each workflow whose schedule came due; the ids of the runs started."""
        started = []
        now = self._now()
        for name, workflow in self._fleet.current().config.workflows.items():
            trigger = workflow.trigger
            if isinstance(trigger, str) or (trigger.every is None and trigger.cron is None):
                continue
            last = self._engine.store.last_fired(name)
            if last is None:
                self._engine.store.fired(name, now)  # first seen: the schedule counts from here
                continue
            if now < next_start(trigger, last):
                continue
            self._engine.store.fired(name, now)
            if (run_id := self._start(name, {}, "schedule")) is not None:
                started.append(run_id)
        return started

    def start_for(self, event: Event) -> list[str]:
        """Start a run of each workflow triggered by this event's type, the event as its input."""
        if event.type.startswith(OWN_EVENTS):
            return []
        started = []
        for name, workflow in self._fleet.current().config.workflows.items():
            trigger = workflow.trigger
            if isinstance(trigger, str):
                continue
            if trigger.event == event.type:
                payload = {"event": {"type": event.type, "agent": event.agent, "data": event.data}}
                run_id = self._start(name, payload, f"event:{event.type}")
            elif (
                trigger.hook is not None
                and event.type == HOOK_RECEIVED
                and event.data.get("hook") == trigger.hook
            ):
                run_id = self._start(name, {"hook": event.data}, f"hook:{trigger.hook}")
            else:
                continue
            if run_id is not None:
                started.append(run_id)
        return started

    def _start(self, name: str, run_input: dict[str, Any], trigger: str) -> str | None:
        try:
            return self._engine.start(name, run_input, trigger).id
        except WorkflowRefused as refused:
            log.warning("workflow %s not started by its %s trigger: %s", name, trigger, refused)
            return None


def next_start(trigger: TriggerConfig, last: datetime) -> datetime:
    if trigger.every is not None:
        return last + timedelta(seconds=parse_duration(trigger.every))
    assert trigger.cron is not None
    return cron_next(trigger.cron, UTC_ZONE, last.astimezone(UTC))

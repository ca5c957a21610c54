"""Whether an agent that was sent a message cannot start: its engine refuses to make or start
its unit, or the unit keeps stopping. A reply that cannot come is then said at once, with the
engine's reason, instead of after the whole wait."""

from __future__ import annotations

from orchestrator.events import EventType, last_event_of, latest_seq, new_events_of
from orchestrator.services import Services

# Restarts after the message was sent that make a unit "failing": one is a recovery (a vanished
# unit made again), more is a unit that stops as soon as it starts.
RESTARTS_THAT_FAIL = 2
LIFECYCLE = (
    EventType.AGENT_STARTED,
    EventType.AGENT_CREATED,
    EventType.AGENT_RESTARTED,
    EventType.AGENT_UNHEALTHY,
    EventType.AGENT_HIBERNATED,
    EventType.AGENT_STOPPED,
)
WATCHED = (EventType.AGENT_UNHEALTHY, EventType.AGENT_RESTARTED)


class StartWatch:
    """Reads the agent's lifecycle events from the moment the message was queued."""

    def __init__(self, services: Services, agent: str) -> None:
        self._services, self._agent = services, agent
        self._after = latest_seq(services.db)
        self._restarts = 0
        self.failure: str | None = self._failing_already()

    def look(self) -> str | None:
        """Why the agent cannot start, once known (then always the same), else None."""
        if self.failure is not None:
            return self.failure
        events, self._after = new_events_of(self._services.db, self._after, WATCHED)
        for event in events:
            if event.agent != self._agent:
                continue
            if event.type == EventType.AGENT_UNHEALTHY and event.data.get("error"):
                self.failure = _engine_refused(event.data)
            elif event.type == EventType.AGENT_RESTARTED:
                self._restarts += 1
                if self._restarts >= RESTARTS_THAT_FAIL:
                    self.failure = (
                        f"its unit keeps stopping: restarted {self._restarts} times since the message "
                        f"was sent (last: {event.data.get('reason', 'no reason given')})"
                    )
        return self.failure

    def _failing_already(self) -> str | None:
        """The engine refused the agent's last start and nothing started it since, while it is
        meant to run (neither asleep nor held by the operator) and its unit does not run."""
        services = self._services
        if services.desired.is_asleep(self._agent) or services.controls.hold_of(self._agent):
            return None
        last = last_event_of(services.db, self._agent, LIFECYCLE)
        if last is None or last.type != EventType.AGENT_UNHEALTHY or not last.data.get("error"):
            return None
        asleep = services.desired.asleep() | services.controls.stopped()
        unit = services.manager.known_units(asleep).get(self._agent)
        if unit is not None and unit.state == "running":
            return None
        return _engine_refused(last.data)


def _engine_refused(data: dict[str, object]) -> str:
    reason = data.get("reason") or "it could not be started"
    return f"{reason}, and the engine refused to start it: {data.get('error')}"


def cannot_start_message(agent: str, item_id: str, failure: str) -> str:
    return (
        f"agent {agent!r} cannot take the message: {failure}. Item {item_id} stays queued; "
        f"look further with `flotilla ps` and `flotilla events --agent {agent}`"
    )

"""The one place that calls the engine's create, run, start, stop, remove and CPU limit of an
agent's unit.

Every policy (operator actions, supervisor restarts, hibernation and wake admission, reconcile,
the fleet manager, the wake boost, the move) asks `Lifecycle.transition`; the machine in
`orchestrator.lifecycle.machine` says whether that policy may, from the state the engine reported.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.protocol import utcnow
from orchestrator.backends.base import LABEL_AGENT, LABEL_FLEET, AgentSpec, Backend, UnitInfo
from orchestrator.config.capacity import Capacity
from orchestrator.lifecycle.actual import ActualStates
from orchestrator.lifecycle.machine import TRANSITIONS, AgentState, LifecycleEvent, Policy, refusal

STOP_TIMEOUT_S = 10.0
"""How long a unit has to stop on its own before the engine kills it, for every stop."""

_STARTS = frozenset({LifecycleEvent.START, LifecycleEvent.WAKE})
_STOPS = frozenset({LifecycleEvent.STOP, LifecycleEvent.HIBERNATE, LifecycleEvent.VACATE})
_LIMITS = frozenset({LifecycleEvent.RAISE_CPUS, LifecycleEvent.RESTORE_CPUS})
_FROM_SPEC = frozenset({LifecycleEvent.CREATE, LifecycleEvent.RUN, LifecycleEvent.RELOCATE})


class TransitionRequest(BaseModel):
    model_config = ConfigDict(frozen=True)

    agent: str
    event: LifecycleEvent
    policy: Policy
    unit_id: str = Field(min_length=1)
    """The unit to move; for an event that makes the unit from a spec, the name it is made under."""
    current: AgentState | None
    """The unit's state as the engine last reported it to the policy asking; None when the
    policy did not read it, which only a CPU limit (the same move in every state) allows."""
    cpus: float | None = Field(default=None, gt=0)
    """The CPU limit to set, for raise_cpus and restore_cpus."""


class Transitioned(BaseModel):
    model_config = ConfigDict(frozen=True)

    request: TransitionRequest
    after: AgentState | None
    changed: bool = True
    """False when the engine could not do it in place (a CPU limit on a runtime without one)."""
    unit: UnitInfo | None = None
    """The unit the engine made, for create, run and relocate."""


class TransitionRefused(Exception):
    """A transition the machine does not allow; nothing was asked of the engine."""

    def __init__(self, request: TransitionRequest, reason: str) -> None:
        self.request = request
        self.reason = reason
        super().__init__(
            f"{request.policy.value} asked to {request.event.value} {request.agent}: refused, {reason}"
        )


def _refusal(request: TransitionRequest, spec: AgentSpec | None) -> str | None:
    event = request.event
    if event in _FROM_SPEC and (spec is None or spec.agent != request.agent):
        return f"{event.value} needs {request.agent}'s spec"
    if event in _LIMITS and request.cpus is None:
        return f"{event.value} needs a CPU limit"
    if request.current is None:
        if event in _LIMITS:
            return refusal(AgentState.STOPPED, event, request.policy)
        return f"{event.value} needs the unit's state as the engine reported it"
    return refusal(request.current, event, request.policy)


class Lifecycle:
    def __init__(self, engine: Backend, actual: ActualStates | None = None) -> None:
        """`actual`: where the state each transition leads to is recorded (none: not recorded)."""
        self._engine = engine
        self._actual = actual

    def units(self, fleet: str, agent: str) -> list[UnitInfo]:
        """`agent`'s units as the engine reports them: its actual state."""
        return self._engine.list({LABEL_FLEET: fleet, LABEL_AGENT: agent})

    def capacity(self) -> Capacity | None:
        """What the engine's host offers (None where the engine cannot tell)."""
        return self._engine.capacity()

    def transition(
        self,
        agent: str,
        event: LifecycleEvent,
        *,
        policy: Policy,
        current: AgentState | None,
        unit_id: str | None = None,
        spec: AgentSpec | None = None,
        cpus: float | None = None,
    ) -> Transitioned:
        """Move `agent`'s unit by `event`, or raise `TransitionRefused` (the engine untouched).
        Create, run and relocate make the unit from `spec`; every other event moves `unit_id`.
        The engine's own failures (`BackendError`) reach the caller as they are."""
        request = TransitionRequest(
            agent=agent,
            event=event,
            policy=policy,
            unit_id=spec.unit_name if spec is not None else unit_id,
            current=current,
            cpus=cpus,
        )
        reason = _refusal(request, spec)
        if reason is not None:
            raise TransitionRefused(request, reason)
        after = TRANSITIONS[(current, event)] if current is not None else None
        if spec is not None and event in _FROM_SPEC:
            done = Transitioned(request=request, after=after, unit=self._make(event, spec))
        else:
            done = Transitioned(request=request, after=after, changed=self._carry_out(request))
        if self._actual is not None and after is not None:
            self._actual.record({agent: after}, utcnow())
        return done

    def _make(self, event: LifecycleEvent, spec: AgentSpec) -> UnitInfo:
        if event is LifecycleEvent.CREATE:
            return self._engine.create(spec)
        return self._engine.run(spec)

    def _carry_out(self, request: TransitionRequest) -> bool:
        event, unit_id = request.event, request.unit_id
        if event in _STARTS:
            self._engine.start(unit_id)
        elif event in _STOPS:
            self._engine.stop(unit_id, timeout_s=STOP_TIMEOUT_S)
        elif event is LifecycleEvent.RESTART:
            self._engine.stop(unit_id, timeout_s=STOP_TIMEOUT_S)
            self._engine.start(unit_id)
        elif event is LifecycleEvent.REMOVE:
            self._engine.remove(unit_id)
        else:
            assert request.cpus is not None  # checked by `transition`
            return self._engine.set_cpus(unit_id, request.cpus)
        return True

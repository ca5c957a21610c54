"""An agent's lifecycle as data: its states, the events that move it, and which policy may ask
for which event. Nothing here calls the engine; `orchestrator.lifecycle.owner` does."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from orchestrator.backends.base import UnitInfo, UnitState


class AgentState(StrEnum):
    """What the engine says of an agent's unit."""

    ABSENT = "absent"
    """No unit: never made, or removed."""
    STOPPED = "stopped"
    """A unit that exists and does not run (made, exited, dead, or put to sleep)."""
    RUNNING = "running"


class LifecycleEvent(StrEnum):
    CREATE = "create"
    """Make the agent's unit from its spec without starting it (it sleeps until work arrives)."""
    RUN = "run"
    """Make the agent's unit from its spec and start it."""
    RELOCATE = "relocate"
    """Make the agent's unit again from a changed spec (another node, other storage) and start
    it, in place of whatever unit of its name is there: the move's step to its target, and its
    way back when a step failed."""
    VACATE = "vacate"
    """Stop the agent's unit where it is, running or not as the engine last listed it, so that its
    storage holds still before the unit is made elsewhere: the move's first step."""
    START = "start"
    STOP = "stop"
    RESTART = "restart"
    HIBERNATE = "hibernate"
    """Stop an idle agent; the hibernation policy keeps it asleep until work arrives."""
    WAKE = "wake"
    """Start a sleeping agent because work arrived or a place became free."""
    REMOVE = "remove"
    RAISE_CPUS = "raise_cpus"
    RESTORE_CPUS = "restore_cpus"


class Policy(StrEnum):
    """The parts of the orchestrator that may ask for a transition."""

    OPERATOR = "operator"
    SUPERVISOR = "supervisor"
    HIBERNATION = "hibernation"
    ADMISSION = "admission"
    RECONCILE = "reconcile"
    FLEET_MANAGER = "fleet_manager"
    WAKE_BOOST = "wake_boost"
    MOVE = "move"


_S, _E = AgentState, LifecycleEvent

TRANSITIONS: Mapping[tuple[AgentState, LifecycleEvent], AgentState] = MappingProxyType(
    {
        (_S.ABSENT, _E.CREATE): _S.STOPPED,
        (_S.ABSENT, _E.RUN): _S.RUNNING,
        (_S.ABSENT, _E.RELOCATE): _S.RUNNING,
        (_S.STOPPED, _E.RELOCATE): _S.RUNNING,
        (_S.RUNNING, _E.RELOCATE): _S.RUNNING,
        (_S.STOPPED, _E.VACATE): _S.STOPPED,
        (_S.RUNNING, _E.VACATE): _S.STOPPED,
        (_S.STOPPED, _E.START): _S.RUNNING,
        (_S.STOPPED, _E.WAKE): _S.RUNNING,
        (_S.STOPPED, _E.RESTART): _S.RUNNING,
        (_S.STOPPED, _E.REMOVE): _S.ABSENT,
        (_S.STOPPED, _E.RAISE_CPUS): _S.STOPPED,
        (_S.STOPPED, _E.RESTORE_CPUS): _S.STOPPED,
        (_S.RUNNING, _E.STOP): _S.STOPPED,
        (_S.RUNNING, _E.HIBERNATE): _S.STOPPED,
        (_S.RUNNING, _E.RESTART): _S.RUNNING,
        (_S.RUNNING, _E.REMOVE): _S.ABSENT,
        (_S.RUNNING, _E.RAISE_CPUS): _S.RUNNING,
        (_S.RUNNING, _E.RESTORE_CPUS): _S.RUNNING,
    }
)
"""Every allowed move: (state before, event) -> state after. A pair not listed is refused."""

REQUESTERS: Mapping[LifecycleEvent, frozenset[Policy]] = MappingProxyType(
    {
        _E.CREATE: frozenset({Policy.RECONCILE}),
        _E.RUN: frozenset({Policy.RECONCILE, Policy.FLEET_MANAGER}),
        _E.RELOCATE: frozenset({Policy.MOVE}),
        _E.START: frozenset({Policy.OPERATOR, Policy.RECONCILE}),
        _E.VACATE: frozenset({Policy.MOVE}),
        _E.STOP: frozenset({Policy.OPERATOR}),
        _E.RESTART: frozenset({Policy.OPERATOR, Policy.SUPERVISOR}),
        _E.HIBERNATE: frozenset({Policy.HIBERNATION}),
        _E.WAKE: frozenset({Policy.ADMISSION}),
        _E.REMOVE: frozenset({Policy.RECONCILE, Policy.FLEET_MANAGER}),
        _E.RAISE_CPUS: frozenset({Policy.WAKE_BOOST}),
        _E.RESTORE_CPUS: frozenset({Policy.WAKE_BOOST}),
    }
)
"""Which policy may ask for which event; any other request is refused."""


def state_of(unit: UnitInfo | None) -> AgentState:
    """The lifecycle state of what the engine reported (None: no unit)."""
    return state_from_engine(unit.state if unit is not None else None)


def state_from_engine(unit_state: UnitState | None) -> AgentState:
    """The lifecycle state of a unit the engine reported in `unit_state` (None: no unit)."""
    if unit_state is None:
        return AgentState.ABSENT
    return AgentState.RUNNING if unit_state == "running" else AgentState.STOPPED


def refusal(state: AgentState, event: LifecycleEvent, policy: Policy) -> str | None:
    """Why `policy` may not move an agent in `state` by `event`; None when it may."""
    if policy not in REQUESTERS[event]:
        allowed = ", ".join(sorted(REQUESTERS[event]))
        return f"only {allowed} may ask for {event.value}"
    if (state, event) not in TRANSITIONS:
        return f"an agent whose unit is {state.value} cannot {event.value}"
    return None

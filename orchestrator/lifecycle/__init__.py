"""Each agent's lifecycle: its states, the events that move it, which policy may ask for what,
the one owner that calls the engine's create, run, start, stop, remove and CPU limit, and the
table of each agent's state: its desired state, the operator's holds on it (stopped, paused),
the supervisor's restarts of it and its actual state as the engine last reported it; and the
CPU limits raised for its start. See docs/architecture.md."""

from orchestrator.lifecycle.actual import ActualStates, reported
from orchestrator.lifecycle.arrivals import WorkArrivals, WorkArrived
from orchestrator.lifecycle.desired import Desired, DesiredStates, Hold, stopped_in_file
from orchestrator.lifecycle.holds import WHOLE_FLEET, Controls
from orchestrator.lifecycle.machine import (
    REQUESTERS,
    TRANSITIONS,
    AgentState,
    LifecycleEvent,
    Policy,
    refusal,
    state_from_engine,
    state_of,
)
from orchestrator.lifecycle.owner import (
    STOP_TIMEOUT_S,
    Lifecycle,
    Transitioned,
    TransitionRefused,
    TransitionRequest,
)
from orchestrator.lifecycle.raised_limits import RaisedLimits
from orchestrator.lifecycle.restarts import Restarts

__all__ = [
    "REQUESTERS",
    "STOP_TIMEOUT_S",
    "TRANSITIONS",
    "WHOLE_FLEET",
    "ActualStates",
    "AgentState",
    "Controls",
    "Desired",
    "DesiredStates",
    "Hold",
    "Lifecycle",
    "LifecycleEvent",
    "Policy",
    "RaisedLimits",
    "Restarts",
    "TransitionRefused",
    "TransitionRequest",
    "Transitioned",
    "WorkArrivals",
    "WorkArrived",
    "actual",
    "arrivals",
    "desired",
    "holds",
    "machine",
    "owner",
    "raised_limits",
    "refusal",
    "reported",
    "restarts",
    "state_from_engine",
    "state_of",
    "stopped_in_file",
    "table",
]

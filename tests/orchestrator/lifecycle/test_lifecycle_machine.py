"""Every transition of an agent's lifecycle, allowed and refused, against the in-package fake
engine: an allowed one makes exactly its engine calls and lands in its state, a refused one
raises `TransitionRefused` with its reason and leaves the engine untouched."""

from __future__ import annotations

import itertools

import pytest
from pydantic import ValidationError

from orchestrator.backends.base import AgentSpec, UnitInfo, UnitState
from orchestrator.lifecycle import (
    REQUESTERS,
    STOP_TIMEOUT_S,
    TRANSITIONS,
    AgentState,
    Lifecycle,
    LifecycleEvent,
    Policy,
    TransitionRefused,
    state_from_engine,
    state_of,
)
from orchestrator.testing.fake_backend import FakeBackend, fake_spec

ENGINE_CALLS = {
    LifecycleEvent.CREATE: ["create"],
    LifecycleEvent.RUN: ["create", "start"],
    LifecycleEvent.RELOCATE: ["create", "start"],
    LifecycleEvent.START: ["start"],
    LifecycleEvent.WAKE: ["start"],
    LifecycleEvent.STOP: ["stop"],
    LifecycleEvent.HIBERNATE: ["stop"],
    LifecycleEvent.VACATE: ["stop"],
    LifecycleEvent.RESTART: ["stop", "start"],
    LifecycleEvent.REMOVE: ["remove"],
    LifecycleEvent.RAISE_CPUS: ["set_cpus"],
    LifecycleEvent.RESTORE_CPUS: ["set_cpus"],
}
LIMITS = (LifecycleEvent.RAISE_CPUS, LifecycleEvent.RESTORE_CPUS)
FROM_SPEC = (LifecycleEvent.CREATE, LifecycleEvent.RUN, LifecycleEvent.RELOCATE)
ALL_PAIRS = list(itertools.product(AgentState, LifecycleEvent))


class TimedFakeBackend(FakeBackend):
    """The fake engine, keeping the timeout of every stop; like Docker, it makes a unit in place
    of its own unit of the same name."""

    def __init__(self) -> None:
        super().__init__()
        self.stop_timeouts: list[float] = []

    def stop(self, unit_id: str, timeout_s: float = 10.0) -> None:
        self.stop_timeouts.append(timeout_s)
        super().stop(unit_id, timeout_s)

    def create(self, spec: AgentSpec) -> UnitInfo:
        with self._lock:
            for unit_id in [key for key, unit in self._units.items() if unit.name == spec.unit_name]:
                del self._units[unit_id]
        return super().create(spec)


def _unit_in(engine: FakeBackend, state: AgentState) -> UnitInfo:
    unit = engine.create(fake_spec("f", "a"))
    if state is AgentState.RUNNING:
        engine.start(unit.id)
    engine.calls.clear()
    return engine.inspect(unit.id)


def _engine_calls(engine: FakeBackend) -> list[str]:
    return [operation for operation, _ in engine.calls]


def _cpus(event: LifecycleEvent) -> float | None:
    return 2.0 if event in LIMITS else None


def _spec(event: LifecycleEvent) -> AgentSpec | None:
    return fake_spec("f", "a") if event in FROM_SPEC else None


@pytest.mark.parametrize(("state", "event"), [pair for pair in ALL_PAIRS if pair in TRANSITIONS])
def test_an_allowed_transition_makes_its_engine_calls_and_lands_in_its_state(
    state: AgentState, event: LifecycleEvent
) -> None:
    engine = TimedFakeBackend()
    unit = _unit_in(engine, state) if state is not AgentState.ABSENT else None
    policy = sorted(REQUESTERS[event])[0]
    done = Lifecycle(engine).transition(
        "a",
        event,
        policy=policy,
        unit_id=unit.id if unit is not None else None,
        current=state,
        spec=_spec(event),
        cpus=_cpus(event),
    )
    assert _engine_calls(engine) == ENGINE_CALLS[event]
    assert done.after is TRANSITIONS[(state, event)]
    assert done.changed
    assert (done.unit is not None) is (event in FROM_SPEC)
    assert state_of(engine.list({})[0] if engine.list({}) else None) is done.after
    assert all(timeout == STOP_TIMEOUT_S for timeout in engine.stop_timeouts)


@pytest.mark.parametrize(("state", "event"), [pair for pair in ALL_PAIRS if pair not in TRANSITIONS])
def test_a_move_the_machine_does_not_list_is_refused_with_the_engine_untouched(
    state: AgentState, event: LifecycleEvent
) -> None:
    engine = FakeBackend()
    unit_id = _unit_in(engine, state).id if state is not AgentState.ABSENT else "gone"
    policy = sorted(REQUESTERS[event])[0]
    with pytest.raises(TransitionRefused) as refused:
        Lifecycle(engine).transition(
            "a", event, policy=policy, unit_id=unit_id, current=state, spec=_spec(event), cpus=_cpus(event)
        )
    assert refused.value.reason == f"an agent whose unit is {state.value} cannot {event.value}"
    assert f"{policy.value} asked to {event.value} a: refused" in str(refused.value)
    assert engine.calls == []


@pytest.mark.parametrize(
    ("event", "policy"),
    [(event, policy) for event in LifecycleEvent for policy in Policy if policy not in REQUESTERS[event]],
)
def test_a_policy_asking_for_an_event_that_is_not_its_own_is_refused(
    event: LifecycleEvent, policy: Policy
) -> None:
    engine = FakeBackend()
    unit = _unit_in(engine, AgentState.RUNNING)
    with pytest.raises(TransitionRefused) as refused:
        Lifecycle(engine).transition(
            "a",
            event,
            policy=policy,
            unit_id=unit.id,
            current=AgentState.RUNNING,
            spec=_spec(event),
            cpus=_cpus(event),
        )
    assert refused.value.reason.startswith("only ") and event.value in refused.value.reason
    assert engine.calls == []


def test_every_event_has_a_policy_that_may_ask_for_it_and_a_state_it_leaves() -> None:
    assert set(REQUESTERS) == set(LifecycleEvent)
    assert all(REQUESTERS[event] for event in LifecycleEvent)
    assert {event for _, event in TRANSITIONS} == set(LifecycleEvent)


@pytest.mark.parametrize("event", LIMITS)
def test_a_cpu_limit_needs_a_limit_and_not_the_units_state(event: LifecycleEvent) -> None:
    engine = FakeBackend()
    unit = _unit_in(engine, AgentState.STOPPED)
    lifecycle = Lifecycle(engine)
    with pytest.raises(TransitionRefused, match="needs a CPU limit"):
        lifecycle.transition("a", event, policy=Policy.WAKE_BOOST, unit_id=unit.id, current=None)
    assert engine.calls == []
    done = lifecycle.transition("a", event, policy=Policy.WAKE_BOOST, unit_id=unit.id, current=None, cpus=1.5)
    assert done.after is None and engine.cpus[unit.id] == [1.5]


def test_a_cpu_limit_the_runtime_cannot_set_says_so() -> None:
    class FixedLimits(FakeBackend):
        def set_cpus(self, unit_id: str, cpus: float) -> bool:
            return False

    engine = FixedLimits()
    unit = _unit_in(engine, AgentState.RUNNING)
    done = Lifecycle(engine).transition(
        "a", LifecycleEvent.RAISE_CPUS, policy=Policy.WAKE_BOOST, unit_id=unit.id, current=None, cpus=4.0
    )
    assert not done.changed


@pytest.mark.parametrize("event", [event for event in LifecycleEvent if event not in LIMITS])
def test_any_other_event_needs_the_state_the_engine_reported(event: LifecycleEvent) -> None:
    engine = FakeBackend()
    unit = _unit_in(engine, AgentState.RUNNING)
    policy = sorted(REQUESTERS[event])[0]
    with pytest.raises(TransitionRefused, match="needs the unit's state"):
        Lifecycle(engine).transition(
            "a", event, policy=policy, unit_id=unit.id, current=None, spec=_spec(event)
        )
    assert engine.calls == []


@pytest.mark.parametrize("event", FROM_SPEC)
def test_making_a_unit_needs_the_agents_own_spec(event: LifecycleEvent) -> None:
    engine = FakeBackend()
    policy = sorted(REQUESTERS[event])[0]
    lifecycle = Lifecycle(engine)
    for spec in (None, fake_spec("f", "other")):
        with pytest.raises(TransitionRefused, match="needs a's spec"):
            lifecycle.transition(
                "a", event, policy=policy, unit_id="flotilla-f-a", current=AgentState.ABSENT, spec=spec
            )
    assert engine.calls == []


def test_a_request_with_a_limit_of_no_cpu_is_rejected_before_the_engine() -> None:
    engine = FakeBackend()
    unit = _unit_in(engine, AgentState.RUNNING)
    with pytest.raises(ValidationError, match="cpus"):
        Lifecycle(engine).transition(
            "a", LifecycleEvent.RAISE_CPUS, policy=Policy.WAKE_BOOST, unit_id=unit.id, current=None, cpus=0
        )
    assert engine.calls == []


@pytest.mark.parametrize(
    ("reported", "state"),
    [
        (None, AgentState.ABSENT),
        ("running", AgentState.RUNNING),
        ("created", AgentState.STOPPED),
        ("exited", AgentState.STOPPED),
        ("dead", AgentState.STOPPED),
        ("missing", AgentState.STOPPED),
    ],
)
def test_what_the_engine_reports_maps_to_one_state(reported: UnitState | None, state: AgentState) -> None:
    assert state_from_engine(reported) is state

"""The lifecycle's table holds each agent's actual state beside its desired state: the state a
transition led to, and what the engine reported whenever the fleet manager listed the units,
with the moment it last changed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from orchestrator.config.loader import load_fleet
from orchestrator.lifecycle import (
    ActualStates,
    AgentState,
    DesiredStates,
    Lifecycle,
    LifecycleEvent,
    Policy,
    TransitionRefused,
    reported,
)
from orchestrator.scheduler.clock import ManualClock
from orchestrator.state.db import Database
from orchestrator.testing.fake_backend import FakeBackend, fake_spec
from orchestrator.wiring import attach_subsystems, core_services, fleet_manager, reconciling_services

EARLY = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
LATER = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def test_a_transition_records_the_state_it_led_to(tmp_path: Path) -> None:
    actual = ActualStates(Database(tmp_path / "state.db"))
    engine = FakeBackend()
    lifecycle = Lifecycle(engine, actual)
    made = lifecycle.transition(
        "a",
        LifecycleEvent.CREATE,
        policy=Policy.RECONCILE,
        current=AgentState.ABSENT,
        spec=fake_spec("f", "a"),
    )
    assert made.unit is not None
    recorded = actual.of("a")
    assert recorded is not None and recorded[0] is AgentState.STOPPED
    lifecycle.transition(
        "a", LifecycleEvent.START, policy=Policy.OPERATOR, unit_id=made.unit.id, current=AgentState.STOPPED
    )
    started = actual.of("a")
    assert started is not None and started[0] is AgentState.RUNNING and started[1] >= recorded[1]
    lifecycle.transition(
        "a", LifecycleEvent.RAISE_CPUS, policy=Policy.WAKE_BOOST, unit_id=made.unit.id, current=None, cpus=2.0
    )
    assert actual.of("a") == started
    with pytest.raises(TransitionRefused):
        lifecycle.transition(
            "a",
            LifecycleEvent.HIBERNATE,
            policy=Policy.OPERATOR,
            unit_id=made.unit.id,
            current=AgentState.RUNNING,
        )
    assert actual.of("a") == started


def test_only_a_changed_state_moves_its_moment(tmp_path: Path) -> None:
    db = Database(tmp_path / "state.db")
    actual = ActualStates(db)
    DesiredStates(db).set("a", "asleep", EARLY)
    assert actual.of("a") is None
    actual.record({"a": AgentState.RUNNING, "b": AgentState.ABSENT}, EARLY)
    actual.record({"a": AgentState.RUNNING, "b": AgentState.STOPPED}, LATER)
    assert actual.of("a") == (AgentState.RUNNING, EARLY)
    assert actual.of("b") == (AgentState.STOPPED, LATER)
    assert DesiredStates(db).of("a") == ("asleep", EARLY)


def test_what_the_engine_listed_names_each_agent_once() -> None:
    engine = FakeBackend()
    stopped = engine.create(fake_spec("f", "a"))
    duplicate = engine.create(fake_spec("g", "a"))
    engine.start(duplicate.id)
    engine.create(fake_spec("f", "stray"))
    states = reported(engine.list({}), ["a", "missing"])
    assert states == {"a": AgentState.RUNNING, "missing": AgentState.ABSENT, "stray": AgentState.STOPPED}
    assert reported([engine.inspect(stopped.id)], ["a"]) == {"a": AgentState.STOPPED}


def test_the_fleet_managers_listings_record_what_the_engine_reports(tmp_path: Path) -> None:
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text("version: 1\nfleet: demo\nagents:\n  a:\n    role: one\n  b:\n    role: two\n")
    engine = FakeBackend()
    core, manager = reconciling_services(load_fleet(fleet_file), engine)
    actual = ActualStates(core.db)
    manager.units()
    listed = actual.of("a")
    assert listed is not None and listed[0] is AgentState.ABSENT
    assert all(result.ok for result in manager.apply())  # made, asleep until they have work
    made = actual.of("a")
    assert made is not None and made[0] is AgentState.STOPPED
    unit = manager.units_by_agent(["a"])["a"]
    engine.start(unit.id)  # behind the orchestrator's back (by hand, or an engine's restart policy)
    assert actual.of("a") == made
    manager.units_by_agent(["a"])
    running = actual.of("a")
    assert running is not None and running[0] is AgentState.RUNNING and running[1] >= made[1]
    b = actual.of("b")
    assert b is not None and b[0] is AgentState.STOPPED


def test_a_wake_and_a_hibernation_record_the_state_they_led_to(tmp_path: Path) -> None:
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text("version: 1\nfleet: demo\nagents:\n  a:\n    role: one\n    hibernate_after: 1m\n")
    core = core_services(load_fleet(fleet_file), FakeBackend())
    core.operator_token = core.tokens.mint_operator()
    clock = ManualClock(datetime.now(UTC))  # a wake is dated by the wall clock
    services = attach_subsystems(core, fleet_manager(core), clock=clock)
    assert all(result.ok for result in services.manager.apply())
    actual = ActualStates(core.db)
    made = actual.of("a")
    assert made is not None and made[0] is AgentState.STOPPED
    assert services.scheduler.wake("a")
    woken = actual.of("a")
    assert woken is not None and woken[0] is AgentState.RUNNING
    assert services.scheduler.put_idle_to_sleep() == []  # first seen idle now
    clock.set(clock.now() + timedelta(hours=1))
    assert services.scheduler.put_idle_to_sleep() == ["a"]
    slept = actual.of("a")
    assert slept is not None and slept[0] is AgentState.STOPPED and slept[1] >= woken[1]

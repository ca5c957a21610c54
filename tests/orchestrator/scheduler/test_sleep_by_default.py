"""Agents sleep until they have work: `up` makes their units without starting them, work wakes
them, idle ticks do not, and `max_awake` admits wakes through a fair queue."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError
from scheduler_helpers import START, build_all_services, scheduler_of, write_fleet

from agent_runtime.protocol import ItemKind, WorkResult
from orchestrator.api.operator.fleet_status import fleet_status_of
from orchestrator.config.models import AgentConfig
from orchestrator.metrics.collector import build_registry, render
from orchestrator.scheduler.clock import ManualClock
from orchestrator.scheduler.sleep_policy import YIELD_AFTER_S
from orchestrator.services import Services


def fleet(agents: str, top: str = "") -> str:
    return f"version: 1\nfleet: sleepy\n{top}agents:\n{agents}"


THREE = "  a:\n    role: one\n  b:\n    role: two\n  c:\n    role: three\n"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


def services_for(tmp_path: Path, text: str, clock: ManualClock) -> Services:
    services = build_all_services(write_fleet(tmp_path / "fleet", text), clock)
    services.manager.apply()
    return services


def states(services: Services) -> dict[str, str]:
    return {unit.agent: unit.state for unit in services.manager.units()}


def message(services: Services, agent: str, text: str = "hello") -> str:
    return services.inbox.submit(agent, ItemKind.OPERATOR_MESSAGE, "operator", text).id


def finish(services: Services, agent: str) -> None:
    """The agent takes and answers every item it has, as a woken agent would."""
    inbox = services.inbox
    for item in inbox.list(agent):
        inbox.complete(agent, item.id, WorkResult(ok=True))


def test_up_makes_every_unit_and_starts_only_the_always_on_ones(tmp_path: Path, clock: ManualClock) -> None:
    text = fleet(THREE + "  d:\n    role: four\n    always_on: true\n")
    services = services_for(tmp_path, text, clock)
    assert states(services) == {"a": "created", "b": "created", "c": "created", "d": "running"}
    assert services.scheduler.store.desired.asleep() == {"a", "b", "c"}
    created = {e.agent for e in services.events.recent(100) if e.type == "agent.created"}
    assert created == {"a", "b", "c"}
    # The supervisor takes none of the sleeping units for a crashed one.
    assert services.supervisor.check_once() == []
    # Applying again changes nothing: they stay asleep.
    assert [a for a in services.manager.plan() if a.pending] == []
    readiness_total = len(services.fleet.config.agents) - len(services.manager.asleep())
    assert readiness_total == 1


def test_a_message_wakes_a_sleeping_agent_and_idle_ticks_do_not(tmp_path: Path, clock: ManualClock) -> None:
    text = fleet("  a:\n    role: one\n    heartbeat: {every: 15m}\n")
    services = services_for(tmp_path, text, clock)
    scheduler = services.scheduler
    for minutes in (0, 15, 30, 45):
        clock.set(START + timedelta(minutes=minutes))
        scheduler.run_due(clock.now())
    assert states(services) == {"a": "created"}
    ticks = scheduler.runs.recent("a", limit=10, kind="tick")
    assert ticks and {t.outcome for t in ticks} == {"idle"}
    assert {t.tokens_in + t.tokens_out for t in ticks} == {0}

    message(services, "a")
    assert states(services) == {"a": "running"}
    assert not scheduler.is_asleep("a")


def test_the_default_is_to_sleep_after_ten_minutes_and_always_on_never_sleeps(tmp_path: Path) -> None:
    config = build_all_services(
        write_fleet(tmp_path / "fleet", fleet(THREE + "  d:\n    always_on: true\n")), ManualClock(START)
    ).fleet.config
    assert config.hibernate_after_of("a") == 600.0
    assert config.hibernate_after_of("d") is None
    with pytest.raises(ValidationError, match="always_on: true and hibernate_after contradict"):
        AgentConfig(always_on=True, hibernate_after="5m")


def test_max_awake_queues_wakes_in_order_and_loses_no_item(tmp_path: Path, clock: ManualClock) -> None:
    services = services_for(tmp_path, fleet(THREE, "max_awake: 1\n"), clock)
    scheduler = services.scheduler
    message(services, "a")
    clock.advance(1)
    for text in ("first for b", "second for b"):
        message(services, "b", text)
    clock.advance(1)
    message(services, "c")
    assert states(services) == {"a": "running", "b": "created", "c": "created"}
    assert [(q.agent, q.position) for q in scheduler.wake_queue()] == [("b", 1), ("c", 2)]
    status = fleet_status_of(services)
    assert (status.awake, status.max_awake) == (1, 1)
    assert {agent.name: agent.wake_position for agent in status.agents} == {"a": None, "b": 1, "c": 2}
    metrics = render(build_registry(services.db, services.fleet_view, services.health, lambda: ["b", "c"]))
    assert b"flotilla_wake_queue_length 2.0" in metrics
    assert b'flotilla_agent_asleep{agent="b"} 1.0' in metrics

    # Busy, it keeps its place; once idle for a short while it gives it to the next in line.
    clock.advance(YIELD_AFTER_S + 1)
    scheduler.run_due(clock.now())
    assert states(services)["a"] == "running"
    finish(services, "a")
    clock.advance(YIELD_AFTER_S + 1)
    scheduler.run_due(clock.now())
    assert states(services) == {"a": "exited", "b": "running", "c": "created"}
    assert [q.agent for q in scheduler.wake_queue()] == ["c"]
    assert services.inbox.pending("b") == 2 and services.inbox.pending("c") == 1


def test_the_queue_is_rebuilt_after_a_restart_oldest_work_first(tmp_path: Path, clock: ManualClock) -> None:
    services = services_for(tmp_path, fleet(THREE, "max_awake: 1\n"), clock)
    message(services, "a")
    clock.advance(1)
    message(services, "c")
    clock.advance(1)
    message(services, "b")
    restarted = scheduler_of(services, clock=clock)  # a new orchestrator: its queue is empty
    assert restarted.wake_queue() == []
    restarted.run_due(clock.now())
    assert [q.agent for q in restarted.wake_queue()] == ["c", "b"]


def test_the_operator_wakes_an_agent_past_the_cap(tmp_path: Path, clock: ManualClock) -> None:
    services = services_for(tmp_path, fleet(THREE, "max_awake: 1\n"), clock)
    message(services, "a")
    assert services.scheduler.wake("b")
    assert states(services) == {"a": "running", "b": "running", "c": "created"}


# Tables that grow with the work done (items, calls, turns, events), not with the agents.
GROWING_TABLES = ("inbox", "gateway_spend_daily", "gateway_usage", "runs", "events")


def test_the_fleet_view_metrics_and_a_scheduler_pass_read_growing_tables_through_an_index(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = services_for(tmp_path, fleet(THREE, "max_awake: 1\n"), clock)
    message(services, "a")
    message(services, "b")
    db = services.db
    seen: list[str] = []
    for name in ("query", "query_one"):
        original = getattr(db, name)

        def recording(sql: str, params: tuple[object, ...] = (), _original: object = original) -> object:
            seen.append(sql)
            return _original(sql, params)  # type: ignore[operator]

        monkeypatch.setattr(db, name, recording)
    fleet_status_of(services)
    render(build_registry(db, services.fleet_view, services.health))
    services.scheduler.run_due(clock.now())
    monkeypatch.undo()
    scans = []
    for sql in {sql for sql in seen if sql.lstrip().upper().startswith("SELECT")}:
        plan = [row[3] for row in db.query(f"EXPLAIN QUERY PLAN {sql}", tuple([None] * sql.count("?")))]
        # SEARCH reads a range of an index; SCAN (of the table or of a whole index) reads it all.
        scans += [
            f"{step}: {sql}" for step in plan if step.startswith(tuple(f"SCAN {t}" for t in GROWING_TABLES))
        ]
    assert seen and scans == []


def test_an_agent_found_running_while_flagged_asleep_is_flagged_awake(
    tmp_path: Path, clock: ManualClock
) -> None:
    """The orchestrator stopped after starting a unit and before flagging its agent awake."""
    services = services_for(tmp_path, fleet(THREE), clock)
    unit = next(unit for unit in services.manager.units() if unit.agent == "a")
    services.backend.start(unit.id)
    assert services.scheduler.is_asleep("a")
    services.manager.apply()
    assert not services.scheduler.is_asleep("a")
    assert services.scheduler.is_asleep("b")
    assert states(services) == {"a": "running", "b": "created", "c": "created"}

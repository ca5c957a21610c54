"""Simulated days with a controllable clock: what heartbeats cost, and when they cost nothing."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from datetime import timedelta

from scheduler_helpers import (
    DAY,
    START,
    DrivingClock,
    FakeBudget,
    SimulatedAgent,
    fleet_yaml,
    heartbeat_items,
    scaffold_agent,
    scheduler_of,
    ticks,
)

from agent_runtime.protocol import ItemKind
from agent_runtime.workspace.versioned import Workspace
from orchestrator.scheduler.service import Scheduler
from orchestrator.services import Services

MakeServices = Callable[[str], Services]
EVERY_15M = "heartbeat: {every: 15m}"
RULES_2H = "# Heartbeat\n\n## Rules\n\n- every 2h: check the build status\n"


def run(scheduler: Scheduler, until_hours: float) -> None:
    asyncio.run(scheduler.run(until=START + timedelta(hours=until_hours)))


def with_agent(services: Services, clock: DrivingClock, **kwargs: object) -> tuple[Scheduler, SimulatedAgent]:
    scheduler = scheduler_of(services, clock=clock, max_sleep_s=3600, **kwargs)  # type: ignore[arg-type]
    services.scheduler = scheduler
    agent = SimulatedAgent(services, scheduler, "worker")
    clock.before_sleep.append(agent.work)
    return scheduler, agent


def test_idle_agent_makes_no_model_call_in_24_hours(make_services: MakeServices) -> None:
    services = make_services(fleet_yaml(EVERY_15M))
    scaffold_agent(services, "worker")
    clock = DrivingClock()
    scheduler, agent = with_agent(services, clock)

    run(scheduler, 24)

    outcomes = ticks(scheduler, "worker")
    assert len(outcomes) == 96
    assert {outcome for outcome, _ in outcomes} == {"idle"}
    assert services.inbox.list("worker", include_done=True) == []
    assert agent.handled == []
    idle_events = [e for e in services.events.recent(1000) if e.type == "heartbeat.idle"]
    assert len(idle_events) == 96


def test_one_rule_every_2h_makes_exactly_12_heartbeats_a_day(make_services: MakeServices) -> None:
    services = make_services(fleet_yaml(EVERY_15M, "heartbeat_model: test"))
    scaffold_agent(services, "worker", RULES_2H)
    clock = DrivingClock()
    scheduler, agent = with_agent(services, clock)

    run(scheduler, 24)

    items = heartbeat_items(services, "worker")
    assert len(items) == 12
    assert len(agent.handled) == 12
    assert all(item.sender == "scheduler" for item in items)
    assert all([r.kind for r in item.reasons] == ["rule"] for item in items)
    assert "every 2h: check the build status" in items[0].text
    outcomes = Counter(outcome for outcome, _ in ticks(scheduler, "worker"))
    assert outcomes == {"idle": 84, "run": 12}
    run_ticks = [v for v in scheduler.runs.recent("worker", 1000, "tick") if v.outcome == "run"]
    assert {v.model for v in run_ticks} == {"test"}
    assert sorted(v.scheduled_at for v in run_ticks if v.scheduled_at) == [
        START + timedelta(hours=2 * k) for k in range(12)
    ]


def test_agents_own_logs_and_writes_never_trigger(make_services: MakeServices) -> None:
    services = make_services(fleet_yaml(EVERY_15M))
    scaffold_agent(services, "worker")
    data = services.paths.agent_dir("worker")
    workspace = Workspace(data)
    clock = DrivingClock()
    scheduler, _ = with_agent(services, clock)
    counter = iter(range(10_000))

    async def agent_writes_its_own_notes() -> None:
        n = next(counter)
        day = clock.now().strftime("%Y-%m-%d")
        with (workspace.root / "memory" / f"{day}.md").open("a") as log:
            log.write(f"- {clock.now():%H:%M} checked in, nothing to do ({n})\n")
        (data / "history").mkdir(exist_ok=True)
        with (data / "history" / "turns.jsonl").open("a") as history:
            history.write(json.dumps({"turn": n}) + "\n")
        (workspace.root / "learnings").mkdir(exist_ok=True)
        (workspace.root / "learnings" / "tools.md").write_text(f"learned {n}\n")
        workspace.write("MEMORY.md", f"fact number {n}\n", "agent", "flush")

    clock.before_sleep.append(agent_writes_its_own_notes)

    run(scheduler, 24)

    assert {outcome for outcome, _ in ticks(scheduler, "worker")} == {"idle"}
    assert heartbeat_items(services, "worker") == []


def test_direct_operator_edit_triggers_exactly_once(make_services: MakeServices) -> None:
    services = make_services(fleet_yaml(EVERY_15M))
    scaffold_agent(services, "worker")
    workspace = Workspace(services.paths.agent_dir("worker"))
    clock = DrivingClock()
    scheduler, agent = with_agent(services, clock)
    run(scheduler, 1)

    (workspace.root / "USER.md").write_text("The operator prefers short answers.\n")  # an editor
    run(scheduler, 3)

    outcomes = ticks(scheduler, "worker")
    assert [o for o, _ in outcomes].count("run") == 1
    assert outcomes[4][0] == "run" and "USER.md modified outside Flotilla" in outcomes[4][1]
    assert len(agent.handled) == 1
    assert agent.handled[0].reasons[0].kind == "workspace_changed"

    workspace.write("SOUL.md", "You are terse.\n", "operator", "edited in the dashboard")
    run(scheduler, 4)
    later = ticks(scheduler, "worker")[12:]
    assert [o for o, _ in later] == ["run", "idle", "idle", "idle"]
    assert "SOUL.md modified by operator" in later[0][1]


def test_file_written_by_the_agent_during_its_turn_does_not_trigger(make_services: MakeServices) -> None:
    services = make_services(fleet_yaml(EVERY_15M))
    scaffold_agent(services, "worker", RULES_2H)
    root = services.paths.workspace("worker")
    clock = DrivingClock()
    scheduler, agent = with_agent(services, clock)
    original_work = agent.work

    async def work_and_write() -> None:
        pending = services.inbox.pending("worker")
        if pending:  # the agent writes a report while it holds the heartbeat item
            (root / "reports").mkdir(exist_ok=True)
            (root / "reports" / f"build-{clock.now():%H%M}.md").write_text("green\n")
        await original_work()

    clock.before_sleep[-1] = work_and_write
    run(scheduler, 24)

    assert Counter(o for o, _ in ticks(scheduler, "worker")) == {"idle": 84, "run": 12}
    assert len(list((root / "reports").iterdir())) == 12


def test_downtime_of_two_hours_runs_one_coalesced_tick(make_services: MakeServices) -> None:
    services = make_services(fleet_yaml(EVERY_15M))
    scaffold_agent(services, "worker", RULES_2H)
    clock = DrivingClock()
    first, _ = with_agent(services, clock)
    run(first, 6)
    assert len(ticks(first, "worker")) == 24

    clock.advance(2 * 3600)  # the orchestrator is down from 06:00 to 08:00
    clock.before_sleep.clear()
    second, agent = with_agent(services, clock)
    run(second, 10)

    records = ticks(second, "worker")
    after_restart = records[24:]
    assert len(after_restart) == 1 + 7  # one coalesced tick at 08:00, then 08:15 .. 09:45
    assert after_restart[0] == ("run", "coalesced 9 missed runs; rule: every 2h: check the build status")
    assert all(outcome != "skipped" for outcome, _ in after_restart)
    # The 2h rule last ran at 04:00; the coalesced tick at 08:00 fires it once, not twice.
    assert len(heartbeat_items(services, "worker")) == 3 + 1
    assert len(agent.handled) == 1


def test_downtime_with_skip_policy_runs_none_of_the_missed_ticks(make_services: MakeServices) -> None:
    services = make_services(fleet_yaml("heartbeat: {every: 15m, missed: skip}"))
    scaffold_agent(services, "worker")
    clock = DrivingClock()
    first, _ = with_agent(services, clock)
    run(first, 6)
    clock.advance(2 * 3600)
    clock.before_sleep.clear()
    second, _ = with_agent(services, clock)
    run(second, 10)

    after_restart = ticks(second, "worker")[24:]
    assert after_restart[0] == ("skipped", "missed: 9 missed runs skipped")
    assert [o for o, _ in after_restart[1:]] == ["idle"] * 7


def test_restart_keeps_the_schedule(make_services: MakeServices) -> None:
    services = make_services(fleet_yaml("heartbeat: {every: 1h}"))
    scaffold_agent(services, "worker")
    clock = DrivingClock()
    first, _ = with_agent(services, clock)
    run(first, 0.5)  # ticked at 00:00, next slot 01:00
    second = scheduler_of(services, clock=clock)
    assert second.run_due(START + timedelta(minutes=45)) == []
    assert [r.outcome for r in second.run_due(START + timedelta(hours=1))] == ["idle"]


def test_over_budget_agent_makes_no_call_until_the_window_resets(make_services: MakeServices) -> None:
    services = make_services(fleet_yaml(EVERY_15M))
    scaffold_agent(services, "worker", RULES_2H)
    clock = DrivingClock()
    budget = FakeBudget(exhausted_until=START + DAY)
    scheduler, agent = with_agent(services, clock, budget=budget)

    run(scheduler, 24)
    assert Counter(ticks(scheduler, "worker")) == {
        ("skipped", "budget: over budget: no work until its budget window resets"): 96
    }
    assert heartbeat_items(services, "worker") == []

    run(scheduler, 26)
    day_two = ticks(scheduler, "worker")[96:]
    assert day_two[0][0] == "run"
    assert len(heartbeat_items(services, "worker")) == 1
    assert agent.handled[0].kind == ItemKind.HEARTBEAT

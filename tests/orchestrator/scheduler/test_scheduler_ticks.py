"""Single ticks: overlap, cron with a time zone, retries, queued work, bad rules, hibernation."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from scheduler_helpers import (
    START,
    DrivingClock,
    SimulatedAgent,
    fleet_yaml,
    heartbeat_items,
    scaffold_agent,
    scheduler_of,
    start_unit,
    ticks,
)

from agent_runtime.protocol import ItemKind, WorkResult
from orchestrator.scheduler.clock import ManualClock
from orchestrator.scheduler.models import TickResult
from orchestrator.scheduler.service import Scheduler
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend

MakeServices = Callable[[str], Services]
RULES_2H = "## Rules\n- every 2h: check the build status\n"


def at(minutes: float) -> datetime:
    return START + timedelta(minutes=minutes)


def test_no_overlap_a_tick_while_busy_is_skipped(make_services: MakeServices, clock: ManualClock) -> None:
    services = make_services(fleet_yaml("heartbeat: {every: 15m}"))
    scaffold_agent(services, "worker", "## Rules\n- every 15m: poll the queue\n")
    scheduler = scheduler_of(services, clock=clock)

    first = scheduler.run_due(at(0))
    assert [r.outcome for r in first] == ["run"]
    # The agent has not picked the heartbeat up yet: the next slot must not queue a second one.
    second = scheduler.run_due(at(15))
    assert [(r.outcome, r.skipped, r.detail) for r in second] == [
        ("skipped", "busy", "a heartbeat is still queued")
    ]
    # Now it works on it (claimed, not finished): still busy.
    claimed = asyncio.run(services.inbox.next("worker", 0))
    assert claimed is not None and claimed.id == first[0].item_id
    assert scheduler.run_due(at(30))[0].detail == "working on an item"
    services.inbox.complete("worker", claimed.id, WorkResult(ok=True))
    assert scheduler.run_due(at(45))[0].outcome == "run"
    assert len(heartbeat_items(services, "worker")) == 2
    skipped = [e for e in services.events.recent(100) if e.type == "heartbeat.skipped"]
    assert [e.data["reason"] for e in skipped] == ["busy", "busy"]


def test_cron_heartbeat_with_time_zone_ticks_on_weekdays_at_local_time(make_services: MakeServices) -> None:
    services = make_services(fleet_yaml('heartbeat: {cron: "0 9 * * 1-5", tz: Europe/Paris}'))
    scaffold_agent(services, "worker")
    clock = DrivingClock()
    scheduler = scheduler_of(services, clock=clock, max_sleep_s=86400)
    asyncio.run(scheduler.run(until=START + timedelta(days=7)))

    views = list(reversed(scheduler.runs.recent("worker", 100, "tick")))
    assert [v.scheduled_at for v in views] == [
        datetime(2025, 1, day, 8, 0, tzinfo=UTC) for day in (6, 7, 8, 9, 10)
    ]
    assert {v.outcome for v in views} == {"idle"}


def test_failed_work_is_offered_for_retry_once(make_services: MakeServices, clock: ManualClock) -> None:
    services = make_services(fleet_yaml("heartbeat: {every: 15m}"))
    scaffold_agent(services, "worker")
    scheduler = scheduler_of(services, clock=clock)
    agent = SimulatedAgent(services, scheduler, "worker")
    assert scheduler.run_due(at(0))[0].outcome == "idle"

    services.inbox.submit("worker", ItemKind.OPERATOR_MESSAGE, "operator", "deploy the site")
    agent.fail_next = True
    asyncio.run(agent.work())

    retry = scheduler.run_due(at(15))[0]
    assert retry.outcome == "run"
    assert [r.kind for r in retry.reasons] == ["retry"]
    assert "operator_message" in retry.reasons[0].detail and "tool crashed" in retry.reasons[0].detail
    # The retry heartbeat fails too: that failure is not retried again (no tick-after-tick loop).
    agent.fail_next = True
    asyncio.run(agent.work())
    assert [r.outcome for r in scheduler.run_due(at(30))] == ["idle"]
    assert [r.outcome for r in scheduler.run_due(at(45))] == ["idle"]


def test_failures_from_before_the_first_tick_are_not_retried(
    make_services: MakeServices, clock: ManualClock
) -> None:
    services = make_services(fleet_yaml("heartbeat: {every: 15m}"))
    scaffold_agent(services, "worker")
    item = services.inbox.submit("worker", ItemKind.OPERATOR_MESSAGE, "operator", "old")
    services.inbox.fail(item.id, "cancelled")
    scheduler = scheduler_of(services, clock=clock)
    assert [r.outcome for r in scheduler.run_due(at(0))] == ["idle"]
    assert [r.outcome for r in scheduler.run_due(at(15))] == ["idle"]


def test_queued_messages_wake_the_agent_without_an_extra_model_turn(
    make_services: MakeServices, clock: ManualClock
) -> None:
    services = make_services(fleet_yaml("heartbeat: {every: 15m}"))
    scaffold_agent(services, "worker")
    scheduler = scheduler_of(services, clock=clock)
    services.inbox.submit("worker", ItemKind.OPERATOR_MESSAGE, "operator", "hello")

    result = scheduler.run_due(at(0))[0]
    assert result.outcome == "run"
    assert result.item_id is None
    assert [r.kind for r in result.reasons] == ["inbox"]
    assert heartbeat_items(services, "worker") == []


def test_bad_rules_are_reported_once_and_in_the_status(
    make_services: MakeServices, clock: ManualClock
) -> None:
    services = make_services(fleet_yaml("heartbeat: {every: 15m}"))
    scaffold_agent(services, "worker", "## Rules\n- every 2h: ok\n- daily 9am: broken\n")
    scheduler = scheduler_of(services, clock=clock)
    for minutes in (0, 15, 30):
        scheduler.run_due(at(minutes))
    reported = [e for e in services.events.recent(100) if e.type == "heartbeat.rules_invalid"]
    assert len(reported) == 1
    assert reported[0].data["errors"] == [
        "HEARTBEAT.md line 3: 'daily 9am: broken': invalid time '9am': write HH:MM on a 24-hour clock, e.g. 09:00"
    ]
    status = scheduler.status("worker")
    assert status.rules_source == "HEARTBEAT.md"
    assert [(r.when, r.due) for r in status.rules] == [("every 2h", False)]
    assert status.rules[0].next_due == at(120)
    assert [(e.line, e.text) for e in status.errors] == [(3, "daily 9am: broken")]
    # The good rule still works.
    assert len(heartbeat_items(services, "worker")) == 1


def test_rules_come_from_fleet_yaml_until_heartbeat_md_exists(
    make_services: MakeServices, clock: ManualClock
) -> None:
    services = make_services(fleet_yaml('heartbeat: {every: 15m, rules: ["every 1h: tidy up"]}'))
    scheduler = scheduler_of(services, clock=clock)
    result = scheduler.run_due(at(0))[0]
    assert [r.detail for r in result.reasons] == ["every 1h: tidy up"]
    assert scheduler.status("worker").rules_source == "fleet.yaml"
    scaffold_agent(services, "worker", "# Heartbeat\n\nNo rules section here.\n")
    assert scheduler.status("worker").rules_source == "fleet.yaml"
    (services.paths.workspace("worker") / "HEARTBEAT.md").write_text("## Rules\n\n(none for now)\n")
    status = scheduler.status("worker")
    assert (status.rules_source, status.rules) == ("HEARTBEAT.md", [])


def test_manual_tick_runs_now_and_leaves_the_schedule(
    make_services: MakeServices, clock: ManualClock
) -> None:
    services = make_services(fleet_yaml("heartbeat: {every: 1h}"))
    scaffold_agent(services, "worker")
    scheduler = scheduler_of(services, clock=clock)
    scheduler.run_due(at(0))
    clock.set(at(20))
    manual = scheduler.tick_now("worker")
    assert (manual.outcome, manual.trigger, manual.summary()) == (
        "idle",
        "manual",
        "idle: nothing to do, no model call",
    )
    assert scheduler.status("worker").next_run == at(60)
    assert ticks(scheduler, "worker") == [("idle", ""), ("idle", "")]


def test_idle_agent_hibernates_and_a_message_wakes_it(make_services: MakeServices) -> None:
    services = make_services(fleet_yaml("heartbeat: {every: 15m}", "hibernate_after: 30m"))
    scaffold_agent(services, "worker")
    unit_id = start_unit(services, "worker")
    backend = services.backend
    assert isinstance(backend, FakeBackend)
    clock = DrivingClock()
    scheduler = scheduler_of(services, clock=clock, max_sleep_s=3600)
    services.scheduler = scheduler

    asyncio.run(scheduler.run(until=START + timedelta(hours=1)))
    assert scheduler.is_asleep("worker")
    assert backend.inspect(unit_id).state == "exited"
    assert backend.count("stop", unit_id) == 1
    hibernated = [e for e in services.events.recent(100) if e.type == "agent.hibernated"]
    assert len(hibernated) == 1 and hibernated[0].data["idle_s"] == 1800.0
    # Idle ticks go on while it sleeps: they need no container.
    assert {o for o, _ in ticks(scheduler, "worker")} == {"idle"}
    # The state survives an orchestrator restart.
    assert scheduler_of(services, clock=clock).is_asleep("worker")

    services.inbox.submit("worker", ItemKind.OPERATOR_MESSAGE, "operator", "wake up")
    assert not scheduler.is_asleep("worker")
    assert backend.inspect(unit_id).state == "running"
    woken = [e for e in services.events.recent(100) if e.type == "agent.started"]
    assert woken[-1].data["reason"] == "wake: operator_message from operator"


def test_a_due_heartbeat_wakes_a_hibernated_agent(make_services: MakeServices, clock: ManualClock) -> None:
    services = make_services(fleet_yaml("heartbeat: {every: 15m}", "hibernate_after: 30m"))
    scaffold_agent(services, "worker")
    unit_id = start_unit(services, "worker")
    backend = services.backend
    assert isinstance(backend, FakeBackend)
    scheduler = scheduler_of(services, clock=clock)
    services.scheduler = scheduler
    for minutes in (0, 15, 30):
        scheduler.run_due(at(minutes))
    assert scheduler.is_asleep("worker")

    (services.paths.workspace("worker") / "USER.md").write_text("new instructions from the operator\n")
    result = scheduler.run_due(at(45))[0]
    assert (result.outcome, result.woke) == ("run", True)
    assert backend.inspect(unit_id).state == "running"
    assert not scheduler.is_asleep("worker")


def test_busy_agent_is_not_hibernated_and_failed_stop_keeps_it_awake(
    make_services: MakeServices, clock: ManualClock
) -> None:
    services = make_services(fleet_yaml("heartbeat: {every: 15m}", "hibernate_after: 30m"))
    scaffold_agent(services, "worker")
    unit_id = start_unit(services, "worker")
    backend = services.backend
    assert isinstance(backend, FakeBackend)
    scheduler = scheduler_of(services, clock=clock)
    scheduler.run_due(at(0))
    item = services.inbox.submit("worker", ItemKind.OPERATOR_MESSAGE, "operator", "long job")
    assert asyncio.run(services.inbox.next("worker", 0)) is not None
    assert scheduler.put_idle_to_sleep(at(120)) == []
    services.inbox.complete("worker", item.id, WorkResult(ok=True))

    backend.fail_next("stop", "daemon went away")
    assert scheduler.put_idle_to_sleep(at(240)) == []
    assert not scheduler.is_asleep("worker")
    assert backend.inspect(unit_id).state == "running"
    # A failed stop is tried again after another full idle period, not in a tight loop.
    assert scheduler.put_idle_to_sleep(at(241)) == []
    assert scheduler.put_idle_to_sleep(at(270)) == ["worker"]
    assert backend.inspect(unit_id).state == "exited"


class StalledClock(ManualClock):
    """Time that never moves on its own: the loop only runs again when something replans it."""

    async def sleep(self, seconds: float) -> None:
        await asyncio.Event().wait()


class CountingScheduler(Scheduler):
    passes = 0

    def run_due(self, now: datetime | None = None) -> list[TickResult]:
        self.passes += 1
        return super().run_due(now)


async def _wait_for(condition: Callable[[], bool]) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition never became true")


def test_activity_of_a_hibernating_agent_replans_the_loop(make_services: MakeServices) -> None:
    services = make_services(fleet_yaml("heartbeat: {every: 1h}", "hibernate_after: 30m"))
    scaffold_agent(services, "worker")
    scheduler = scheduler_of(services, CountingScheduler, clock=StalledClock(START))
    agent = SimulatedAgent(services, scheduler, "worker")

    async def scenario() -> None:
        task = asyncio.ensure_future(scheduler.run())
        await _wait_for(lambda: scheduler.passes == 1)
        services.inbox.submit("worker", ItemKind.OPERATOR_MESSAGE, "operator", "hello")
        await agent.work()  # posts a turn record: the hibernation deadline moved
        await _wait_for(lambda: scheduler.passes == 2)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert scheduler.passes == 2


def test_due_memory_jobs_wake_a_hibernated_agent(make_services: MakeServices, clock: ManualClock) -> None:
    services = make_services(fleet_yaml("heartbeat: {every: 15m}", "hibernate_after: 30m"))
    scaffold_agent(services, "worker")
    unit_id = start_unit(services, "worker")
    backend = services.backend
    assert isinstance(backend, FakeBackend)
    scheduler = scheduler_of(services, clock=clock)
    services.scheduler = scheduler
    scheduler.memory_due.note("worker", at(180))  # as its last check-in said
    for minutes in (0, 15, 30, 45, 60):
        scheduler.run_due(at(minutes))
    assert scheduler.is_asleep("worker")
    # Kept across an orchestrator restart.
    scheduler = scheduler_of(services, clock=clock)
    services.scheduler = scheduler
    scheduler.run_due(at(179))
    assert scheduler.is_asleep("worker")
    scheduler.run_due(at(180))
    assert not scheduler.is_asleep("worker")
    assert backend.inspect(unit_id).state == "running"
    woken = [e for e in services.events.recent(100) if e.type == "agent.started"]
    assert woken[-1].data["reason"] == "wake: memory jobs due"

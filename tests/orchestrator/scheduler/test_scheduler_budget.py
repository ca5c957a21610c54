"""Budgets through the real gateway: an agent over its daily cap gets no tick work until the
UTC day (its budget window) turns over."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from datetime import timedelta

from scheduler_helpers import (
    START,
    DrivingClock,
    SimulatedAgent,
    fleet_yaml,
    heartbeat_items,
    scaffold_agent,
    scheduler_of,
    ticks,
)

from orchestrator.gateway.models import ChatCompletionRequest, ChatMessage
from orchestrator.gateway.service import Gateway
from orchestrator.services import Services

MakeServices = Callable[[str], Services]


def test_real_gateway_budget_stops_ticks_and_the_next_day_resets_it(make_services: MakeServices) -> None:
    services = make_services(fleet_yaml("heartbeat: {every: 15m}", "budget: {daily_tokens: 15}"))
    scaffold_agent(services, "worker", "## Rules\n- every 2h: check the build status\n")
    clock = DrivingClock()
    gateway = Gateway(services.db, services.fleet_view, services.controls, services.events, clock=clock.now)
    services.gateway = gateway
    scheduler = scheduler_of(
        services, clock=clock, max_sleep_s=3600, budget=gateway
    )  # no fake: the real gateway decides
    services.scheduler = scheduler
    agent = SimulatedAgent(services, scheduler, "worker")
    calls: list[int] = []

    async def work_with_model_calls() -> None:
        for _ in services.inbox.list("worker"):
            # About 11 prompt tokens, an estimate of 12 that passes, and ~20 actually spent.
            message = ChatMessage(role="user", content="check the build status")
            request = ChatCompletionRequest(model="test", messages=[message], max_tokens=1)
            _, completion = await gateway.chat("worker", request)
            calls.append(completion.usage.total_tokens if completion.usage else 0)
        await agent.work()

    clock.before_sleep.append(work_with_model_calls)
    asyncio.run(scheduler.run(until=START + timedelta(days=1)))

    # The first heartbeat's model call spends more than the 15-token day: the rest of the day is skipped.
    assert len(calls) == 1 and calls[0] > 15
    exhausted = [e for e in services.events.recent(1000) if e.type == "budget.exhausted"]
    assert [e.agent for e in exhausted] == ["worker"]
    day_one = Counter(outcome for outcome, _ in ticks(scheduler, "worker"))
    assert day_one == {"run": 1, "skipped": 95}
    assert {d for o, d in ticks(scheduler, "worker") if o == "skipped"} == {
        "budget: over budget: no work until its budget window resets"
    }

    asyncio.run(scheduler.run(until=START + timedelta(days=1, minutes=1)))
    assert len(calls) == 2
    assert ticks(scheduler, "worker")[96][0] == "run"  # 00:00 UTC: a new window, the due rule runs
    assert len(heartbeat_items(services, "worker")) == 2

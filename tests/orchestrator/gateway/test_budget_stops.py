"""The gateway's budgets tell the scheduler who may not spend and until when; a tick reads that
as data. What it is told must follow the ledger and the caps: at start-up, after an apply, and for
the fleet-wide caps that one agent's spend exhausts for all."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from orchestrator.config.loader import load_fleet
from orchestrator.gateway.models import ChatCompletionRequest, ChatMessage
from orchestrator.gateway.service import Gateway
from orchestrator.scheduler.clock import ManualClock
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.wiring import attach_subsystems, core_services, fleet_manager

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SKIPPED = ("skipped", "budget")


def fleet_text(agent_budget: str = "", fleet_budget: str = "") -> str:
    return (
        "version: 1\nfleet: stops\n"
        + (f"budget: {fleet_budget}\n" if fleet_budget else "")
        + "agents:\n  alpha:\n    role: spends\n"
        + (f"    budget: {agent_budget}\n" if agent_budget else "")
        + "  beta:\n    role: waits\n"
    )


class Orchestrator:
    """An orchestrator's parts on one state folder, on a manual clock; started again at will."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.clock = ManualClock(START)
        self.opened: list[Services] = []

    def start(self) -> Services:
        core = core_services(load_fleet(self.root / "fleet.yaml"), FakeBackend())
        gateway = Gateway(core.db, core.fleet_view, core.controls, core.events, clock=self.clock.now)
        services = attach_subsystems(core, fleet_manager(core), gateway=gateway, clock=self.clock)
        self.opened.append(services)
        return services


@pytest.fixture
def orchestrator(tmp_path: Path) -> Iterator[Orchestrator]:
    made = Orchestrator(tmp_path)
    yield made
    for services in made.opened:
        services.db.close()


def spend(services: Services, agent: str) -> None:
    """One model call of about 20 tokens, past a 15-token cap."""
    request = ChatCompletionRequest(
        model="test", messages=[ChatMessage(role="user", content="check the build status")], max_tokens=1
    )
    asyncio.run(services.gateway.chat(agent, request))


def tick(services: Services, agent: str) -> tuple[str, str | None]:
    result = services.scheduler.tick_now(agent)
    return result.outcome, result.skipped


def test_a_cap_spent_before_a_restart_stops_the_first_tick(orchestrator: Orchestrator) -> None:
    (orchestrator.root / "fleet.yaml").write_text(fleet_text(agent_budget="{daily_tokens: 15}"))
    spend(orchestrator.start(), "alpha")

    restarted = orchestrator.start()

    assert tick(restarted, "alpha") == SKIPPED
    assert tick(restarted, "beta") != SKIPPED
    orchestrator.clock.advance(timedelta(days=1).total_seconds())
    assert tick(restarted, "alpha") != SKIPPED  # a new daily window


def test_an_apply_that_raises_the_cap_lets_the_next_tick_work(orchestrator: Orchestrator) -> None:
    fleet_file = orchestrator.root / "fleet.yaml"
    fleet_file.write_text(fleet_text(agent_budget="{daily_tokens: 15}"))
    services = orchestrator.start()
    spend(services, "alpha")
    assert tick(services, "alpha") == SKIPPED

    fleet_file.write_text(fleet_text(agent_budget="{daily_tokens: 100000}"))
    services.fleet_view.replace(load_fleet(fleet_file))

    assert tick(services, "alpha") != SKIPPED


def test_one_agent_spending_the_fleets_cap_stops_every_agents_tick(orchestrator: Orchestrator) -> None:
    (orchestrator.root / "fleet.yaml").write_text(fleet_text(fleet_budget="{daily_tokens: 15}"))
    services = orchestrator.start()
    assert tick(services, "beta") != SKIPPED

    spend(services, "alpha")

    assert tick(services, "beta") == SKIPPED
    assert tick(services, "alpha") == SKIPPED

"""The fleet view (`ps`, the dashboard) reads each agent's unit from the supervisor's listings:
no engine call per view while the supervisor keeps them, and what changed shows by its next pass."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.api.operator.fleet_status import AgentStatus, fleet_status_of
from orchestrator.config.loader import load_fleet
from orchestrator.fleet.unit_board import FULL_LISTING_S, UnitBoard
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.wiring import build_services

FLEET = (
    "version: 1\nfleet: board\nagents:\n"
    "  alpha:\n    role: first\n    always_on: true\n"
    "  beta:\n    role: second\n    always_on: true\n"
    "  gamma:\n    role: sleeps until it has work\n"
)


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def services(tmp_path: Path, backend: FakeBackend) -> Iterator[Services]:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    built = build_services(load_fleet(tmp_path / "fleet.yaml"), backend)
    assert all(result.ok for result in built.manager.apply())
    yield built
    built.db.close()


def view(services: Services) -> dict[str, AgentStatus]:
    return {agent.name: agent for agent in fleet_status_of(services).agents}


def unit_id(backend: FakeBackend, agent: str) -> str:
    return next(unit.id for unit in backend.list({}) if unit.agent == agent)


def test_views_ask_the_engine_nothing_while_the_supervisor_keeps_the_units(
    services: Services, backend: FakeBackend
) -> None:
    services.supervisor.check_once()
    view(services)  # the first read lists the fleet: nobody had read it
    listed = backend.count("list")

    for _ in range(5):
        agents = view(services)

    assert backend.count("list") == listed
    assert {name: agent.state for name, agent in agents.items()} == {
        "alpha": "running",
        "beta": "running",
        "gamma": "created",
    }
    assert agents["alpha"].unit_id == unit_id(backend, "alpha")


def test_without_a_supervisor_pass_each_view_lists_the_units(
    services: Services, backend: FakeBackend
) -> None:
    listed = backend.count("list")

    view(services)
    view(services)

    assert backend.count("list") == listed + 2


def test_a_unit_that_died_shows_down_once_the_supervisor_has_passed(
    services: Services, backend: FakeBackend
) -> None:
    services.supervisor.check_once()
    backend.stop(unit_id(backend, "alpha"))  # it died: the engine knows, the orchestrator not yet
    backend.fail_next("start")  # and the supervisor cannot start it again

    services.supervisor.check_once()
    agents = view(services)

    assert agents["alpha"].state == "exited"
    assert agents["alpha"].health == "down"
    assert agents["beta"].state == "running"


def test_a_woken_agent_shows_running_at_once(services: Services, backend: FakeBackend) -> None:
    services.supervisor.check_once()
    assert view(services)["gamma"].state == "created"

    assert services.scheduler.wake("gamma")
    agents = view(services)

    assert agents["gamma"].state == "running"
    assert agents["gamma"].hibernated is False


def test_an_agent_put_to_sleep_shows_stopped_at_once(services: Services, backend: FakeBackend) -> None:
    assert services.scheduler.wake("gamma")
    services.supervisor.check_once()
    assert view(services)["gamma"].state == "running"

    services.actions.stop_agent("gamma")
    agents = view(services)

    assert agents["gamma"].state == "exited"
    assert agents["gamma"].held == "stopped"


def test_a_restart_by_the_operator_shows_its_new_start(services: Services, backend: FakeBackend) -> None:
    services.supervisor.check_once()
    view(services)
    time.sleep(0.2)

    services.actions.restart_agent("alpha")
    uptime = view(services)["alpha"].uptime_s

    assert uptime is not None and uptime < 0.2


def test_the_supervisor_lists_every_unit_only_while_the_fleet_is_read() -> None:
    now = [1000.0]
    board = UnitBoard(clock=lambda: now[0])
    board.record_all([], now[0])
    assert not board.full_listing_due(now[0] + FULL_LISTING_S)  # nobody reads it

    board.note_read(now[0])
    assert not board.full_listing_due(now[0] + 1)
    assert board.full_listing_due(now[0] + FULL_LISTING_S)

    # Read no more for a while: the whole fleet is no longer listed, nor is the board trusted.
    later = now[0] + 3 * FULL_LISTING_S
    board.kept(later)
    assert not board.full_listing_due(later)
    assert not board.trusted(later)

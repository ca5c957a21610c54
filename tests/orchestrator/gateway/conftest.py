"""Fixtures: an orchestrator app with a live gateway, served by uvicorn on loopback, and a fake upstream."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gateway_harness import (
    FAST_RETRY,
    KEY_ENV,
    SECRET_KEY,
    Clock,
    Launch,
    Orchestrator,
    fleet_yaml,
)

from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.control.auth import OPERATOR, TokenStore
from orchestrator.events import EventBus
from orchestrator.fleet.view import FleetView
from orchestrator.gateway.service import Gateway
from orchestrator.lifecycle import Controls
from orchestrator.running_agents.health import HealthBoard
from orchestrator.running_agents.requests import AgentLinks
from orchestrator.state.db import Database
from orchestrator.state.paths import StatePaths
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.fake_upstream import FakeUpstream
from orchestrator.testing.server import serve_app
from orchestrator.wiring import Core, attach_subsystems, fleet_manager
from orchestrator.workspaces.access import WorkspaceAccess


@pytest.fixture(scope="session")
def shared_upstream() -> Iterator[tuple[FakeUpstream, str]]:
    fake = FakeUpstream()
    with fake.serve() as url:
        yield fake, url
        fake.release()


@pytest.fixture
def upstream(shared_upstream: tuple[FakeUpstream, str]) -> Iterator[tuple[FakeUpstream, str]]:
    """The fake upstream, with an empty script and no recorded request."""
    shared_upstream[0].reset()
    yield shared_upstream
    shared_upstream[0].reset()


@pytest.fixture
def launch(
    tmp_path: Path, upstream: tuple[FakeUpstream, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Launch]:
    """Start an orchestrator for a fleet whose YAML follows the common `llm` header.

    `body` may add `  fallback_model: ...` / `  models: ...` lines under llm and must declare
    `agents:` (and optionally `budget:`).
    """
    monkeypatch.setenv(KEY_ENV, SECRET_KEY)
    monkeypatch.delenv("FLT_TEST_UNSET_KEY_VARIABLE", raising=False)
    fake, upstream_url = upstream
    stack = ExitStack()
    started: list[Orchestrator] = []

    def start(body: str, clock: Clock | None = None, db: Database | None = None) -> Orchestrator:
        fleet_file = tmp_path / "fleet.yaml"
        fleet_file.write_text(fleet_yaml(upstream_url, body))
        fleet = load_fleet(fleet_file)
        paths = StatePaths.for_fleet_file(fleet_file)
        paths.ensure()
        database = db or Database(paths.db)
        events = EventBus(database)
        tokens = TokenStore(database)
        fleet_view = FleetView(fleet)
        agent_links = AgentLinks()
        core = Core(
            fleet_view=fleet_view,
            paths=paths,
            db=database,
            events=events,
            tokens=tokens,
            backend=FakeBackend(),
            controls=Controls(database),
            health=HealthBoard(),
            agent_links=agent_links,
            workspaces=WorkspaceAccess(fleet_view, paths, events, agent_links),
            operator_token=tokens.mint_operator(),
        )
        minted = {name: tokens.mint(name) for name in fleet.config.agents}
        minted[OPERATOR] = core.operator_token
        the_clock = clock or Clock(datetime(2030, 5, 17, 12, 0, tzinfo=UTC))
        gateway = Gateway(database, fleet_view, core.controls, events, clock=the_clock, retry=FAST_RETRY)
        services = attach_subsystems(core, fleet_manager(core), gateway=gateway)
        url = stack.enter_context(serve_app(create_app(services)))
        orchestrator = Orchestrator(services, services.gateway, url, minted, fake, the_clock)
        started.append(orchestrator)
        return orchestrator

    yield start
    fake.release()
    for orchestrator in started:
        orchestrator.close()  # clients first, so that servers have no open connection to wait for
    stack.close()


@pytest.fixture
def refused_connections(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every outgoing connection fails; the list collects the addresses tried."""
    attempts: list[object] = []

    def refuse(_socket: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    return attempts

"""Fixtures of every orchestrator test that asks for them: a two-agent fleet with real SQLite state and
scaffolded workspaces, and clients for its API."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from fastapi import FastAPI  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from agent_runtime.workspace.versioned import scaffold  # noqa: E402
from orchestrator.api.app import create_app  # noqa: E402
from orchestrator.backends.process import ProcessBackend  # noqa: E402
from orchestrator.config.loader import load_fleet  # noqa: E402
from orchestrator.services import Services  # noqa: E402
from orchestrator.state.paths import StatePaths  # noqa: E402
from orchestrator.wiring import attach_subsystems, core_services, fleet_manager  # noqa: E402

LOOKUP_INTERFACE = """\
---
operations:
  - name: lookup
    description: Look a term up.
    input:
      type: object
      properties: {term: {type: string}}
      required: [term]
---
I look things up.
"""

FLEET_YAML = """\
version: 1
fleet: optest
agents:
  alpha:
    role: researcher
    interface: lookup.md
  beta:
    role: writer
"""


def write_fleet(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "lookup.md").write_text(LOOKUP_INTERFACE)
    path = root / "fleet.yaml"
    path.write_text(textwrap.dedent(FLEET_YAML))
    return path


def build_services(fleet_file: Path) -> Services:
    fleet = load_fleet(fleet_file)
    paths = StatePaths.for_fleet_file(fleet_file)
    core = core_services(fleet, ProcessBackend(paths.root), paths)
    core.operator_token = core.tokens.mint_operator()
    services = attach_subsystems(core, fleet_manager(core))
    for agent in fleet.config.agents:
        scaffold(
            paths.agent_dir(agent),
            seeds={
                "SOUL.md": f"# {agent}\n\nYou are {agent}.\n",
                "INTERFACE.md": fleet.interfaces.get(agent, ""),
                "MEMORY.md": "# Memory\n",
            },
            readonly={"SYSTEM.md": "# System\n", "AGENTS.md": "# Peers\n"},
        )
    return services


@pytest.fixture
def fleet_file(tmp_path: Path) -> Path:
    return write_fleet(tmp_path / "fleet")


@pytest.fixture
def services(fleet_file: Path) -> Iterator[Services]:
    built = build_services(fleet_file)
    yield built
    built.db.close()


@pytest.fixture
def app(services: Services) -> FastAPI:
    return create_app(services)


@pytest.fixture
def operator(app: FastAPI, services: Services) -> Iterator[TestClient]:
    with TestClient(app, headers={"authorization": f"Bearer {services.operator_token}"}) as client:
        yield client


@pytest.fixture
def anonymous(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as client:
        yield client


@pytest.fixture
def agent_client(app: FastAPI, services: Services) -> Iterator[TestClient]:
    token = services.tokens.mint("alpha")
    with TestClient(app, headers={"authorization": f"Bearer {token}"}) as client:
        yield client

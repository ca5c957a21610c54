"""The fleet in force has one owner (`FleetView`): an apply replaces it, a dry run never does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.config.settings import runtime_hash
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.wiring import build_services

FLEET = "version: 1\nfleet: inforce\nagents:\n  alpha:\n    role: first\n  beta:\n    role: second\n"


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    built = build_services(load_fleet(tmp_path / "fleet.yaml"), FakeBackend())
    assert all(result.ok for result in built.manager.apply())
    yield built
    built.db.close()


@pytest.fixture
def operator(services: Services) -> Iterator[TestClient]:
    headers = {"authorization": f"Bearer {services.operator_token}"}
    with TestClient(create_app(services), headers=headers) as client:
        yield client


def served_role(services: Services, client: TestClient) -> str:
    """The role the orchestrator serves to alpha, as alpha reads it."""
    token = services.tokens.mint("alpha")
    config = client.get("/agent/v1/config", headers={"authorization": f"Bearer {token}"})
    assert config.status_code == 200, config.text
    role: str = config.json()["role"]
    return role


def test_a_dry_run_plans_the_change_and_leaves_the_fleet_in_force(
    services: Services, operator: TestClient, tmp_path: Path
) -> None:
    in_force = services.fleet
    served = runtime_hash(in_force, "alpha")
    changed = tmp_path / "next.yaml"
    changed.write_text(FLEET.replace("role: first", "role: changed"))

    planned = operator.post("/api/v1/apply", params={"dry_run": True, "file": str(changed)})

    assert planned.status_code == 200, planned.text
    assert planned.json()["changed"] is True
    assert services.fleet_view.current() is in_force
    assert services.fleet.config.agents["alpha"].role == "first"
    assert services.manager.fleet is in_force
    assert runtime_hash(services.fleet, "alpha") == served
    assert served_role(services, operator) == "first"


def test_an_apply_puts_the_new_fleet_in_force_for_every_part(
    services: Services, operator: TestClient, tmp_path: Path
) -> None:
    changed = tmp_path / "next.yaml"
    changed.write_text(FLEET.replace("role: first", "role: changed"))

    applied = operator.post("/api/v1/apply", params={"file": str(changed)})

    assert applied.status_code == 200, applied.text
    assert services.fleet.config.agents["alpha"].role == "changed"
    assert services.manager.fleet is services.fleet_view.current()
    assert served_role(services, operator) == "changed"

"""`POST /api/v1/apply?image=`: the image agents created or recreated by an apply run, as `flotilla
apply` passes it when the fleet's MCP packages changed (the agent image's extension)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.images.names import base_image
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.wiring import build_services

FLEET = "version: 1\nfleet: images\nagents:\n  alpha:\n    role: first\n  beta:\n    role: second\n"
WITH_PACKAGE = FLEET.replace(
    "    role: first\n",
    "    role: first\n    tools:\n      mcp:\n        - name: time\n          package: mcp-server-time\n"
    "          command: [python3, -m, mcp_server_time]\n",
)


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    built = build_services(load_fleet(tmp_path / "fleet.yaml"), FakeBackend(), image="flotilla/agent:t")
    assert all(result.ok for result in built.manager.apply())
    yield built
    built.db.close()


@pytest.fixture
def operator(services: Services) -> Iterator[TestClient]:
    headers = {"authorization": f"Bearer {services.operator_token}"}
    with TestClient(create_app(services), headers=headers) as client:
        yield client


def test_the_image_of_an_apply_runs_the_agents_it_recreates(
    services: Services, operator: TestClient, tmp_path: Path
) -> None:
    changed = tmp_path / "next.yaml"
    changed.write_text(WITH_PACKAGE)
    planned = operator.post("/api/v1/apply", params={"dry_run": True, "file": str(changed)})
    assert planned.json()["image"] == "flotilla/agent:t"
    extension = "flotilla/agent:t-ext-0123456789ab"
    applied = operator.post("/api/v1/apply", params={"file": str(changed), "image": extension})
    assert applied.status_code == 200, applied.text
    assert applied.json()["image"] == extension
    recreated = [a for a in applied.json()["plan"] if a["kind"] == "recreate"]
    assert [(a["agent"], a["fields"]) for a in recreated] == [("alpha", ["tools.mcp"])]
    assert services.manager.spec_for("alpha").image == extension


def test_an_image_that_is_not_the_agent_image_is_refused(
    services: Services, operator: TestClient, tmp_path: Path
) -> None:
    changed = tmp_path / "next.yaml"
    changed.write_text(WITH_PACKAGE)
    refused = operator.post("/api/v1/apply", params={"file": str(changed), "image": "evil/image:latest"})
    assert refused.status_code == 422
    assert "neither the agent image 'flotilla/agent:t' nor an extension of it" in refused.json()["message"]
    assert services.manager.image == "flotilla/agent:t"
    assert "tools" not in services.fleet.config.agents["alpha"].model_fields_set


def test_an_extension_tag_names_its_agent_image() -> None:
    assert base_image("flotilla/agent:t-ext-0123456789ab") == "flotilla/agent:t"
    assert base_image("flotilla/agent:t") == "flotilla/agent:t"

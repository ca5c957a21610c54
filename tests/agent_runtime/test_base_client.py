"""The standard-library part of the agent's client (`agent_runtime.transport.base_client`): what a
new agent process uses to report in before its runtime loads."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_runtime.process.settings import Settings
from agent_runtime.transport.boot import report_in
from orchestrator.api.app import create_app
from orchestrator.services import Services
from orchestrator.testing.fake_fleet import fake_fleet_services
from orchestrator.testing.server import serve_app

FLEET = "version: 1\nfleet: boot\nagents:\n  alpha:\n    role: a\n"


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    with fake_fleet_services(tmp_path, FLEET) as built:
        yield built


@pytest.fixture
def base_url(services: Services) -> Iterator[str]:
    with serve_app(create_app(services)) as url:
        yield url


def test_reporting_in_loads_neither_pydantic_nor_the_wire_models() -> None:
    probe = (
        "import sys, agent_runtime.transport.boot; "
        "print(sorted(m for m in ('pydantic', 'websockets', 'agent_runtime.protocol') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"


def test_reporting_in_reads_a_rotated_token_on_its_next_attempt(
    services: Services, base_url: str, tmp_path: Path
) -> None:
    settings = Settings(orchestrator_url=base_url, agent="alpha", data_dir=tmp_path / "alpha")
    settings.runtime_dir.mkdir(parents=True)
    settings.token_file.write_text("not-a-token")
    stopping = threading.Event()
    reported: list[bytes | None] = []
    boot = threading.Thread(target=lambda: reported.append(report_in(settings, stopping)))
    boot.start()
    boot.join(0.3)
    assert boot.is_alive()  # refused (401), retrying
    settings.token_file.write_text(services.tokens.mint("alpha"))
    boot.join(10)
    stopping.set()
    assert reported and reported[0] is not None and json.loads(reported[0])["agent"] == "alpha"

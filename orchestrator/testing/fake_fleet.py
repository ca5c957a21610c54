"""A fleet's services on the fake backend, for tests that serve the real API in-process."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from orchestrator.config.loader import load_fleet
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.wiring import build_services


@contextmanager
def fake_fleet_services(folder: Path, fleet_yaml: str) -> Iterator[Services]:
    """The services of this fleet.yaml (written into `folder`), its database closed after."""
    (folder / "fleet.yaml").write_text(fleet_yaml)
    built = build_services(load_fleet(folder / "fleet.yaml"), FakeBackend())
    try:
        yield built
    finally:
        built.db.close()


def agent_http(services: Services, base_url: str, agent: str, timeout_s: float = 10) -> httpx.Client:
    """An HTTP client holding a fresh token of this agent."""
    token = services.tokens.mint(agent)
    return httpx.Client(base_url=base_url, headers={"authorization": f"Bearer {token}"}, timeout=timeout_s)

"""Real SQLite state, a real inbox, a fake backend and a manual clock for scheduler tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
for entry in (REPO_ROOT, Path(__file__).parent):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

from scheduler_helpers import START, build_services, write_fleet  # noqa: E402

from orchestrator.scheduler.clock import ManualClock  # noqa: E402
from orchestrator.services import Services  # noqa: E402


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def fleet_root(tmp_path: Path) -> Path:
    return tmp_path / "fleet"


@pytest.fixture
def make_services(fleet_root: Path) -> Iterator[object]:
    """Build Services for a fleet.yaml text; every database opened is closed at the end."""
    opened: list[Services] = []

    def make(fleet_yaml: str) -> Services:
        services = build_services(write_fleet(fleet_root, fleet_yaml))
        opened.append(services)
        return services

    yield make
    for services in opened:
        services.db.close()

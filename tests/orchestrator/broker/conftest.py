"""A small fleet with contracts, real SQLite state, and a broker wired over it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from broker_helpers import build_services, write_fleet  # noqa: E402

from orchestrator.services import Services  # noqa: E402


@pytest.fixture
def fleet_file(tmp_path: Path) -> Path:
    return write_fleet(tmp_path / "fleet")


@pytest.fixture
def services(fleet_file: Path) -> Iterator[Services]:
    built = build_services(fleet_file)
    yield built
    built.db.close()

"""The `make_flows` fixture: a fleet with these workflows and its engine on a clock of the test's."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from workflow_helpers import INTERFACES, Clock, Flows, fleet_with

from orchestrator.testing.fake_fleet import fake_fleet_services


@pytest.fixture
def make_flows(tmp_path: Path) -> Iterator[Callable[[str], Flows]]:
    shutil.copytree(INTERFACES, tmp_path / "interfaces")
    with ExitStack() as stack:

        def make(workflows: str) -> Flows:
            services = stack.enter_context(fake_fleet_services(tmp_path, fleet_with(workflows)))
            return Flows(services, Clock())

        yield make

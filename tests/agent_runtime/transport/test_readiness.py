"""The readiness check: an agent is ready once its orchestrator accepted a check-in, and stops
being ready when the orchestrator has not answered for a while; alive either way."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agent_runtime import health
from agent_runtime.process.state import RuntimeState
from agent_runtime.transport import boot
from agent_runtime.transport.base_client import RouteAnswer
from agent_runtime.transport.checkin import CheckInThread
from agent_runtime.transport.errors import OrchestratorUnavailable


class Orchestrator:
    """Stands in for the agent's client: accepts check-ins, or answers none."""

    def __init__(self) -> None:
        self.down = False

    def checkin(self, _snapshot: Any) -> SimpleNamespace:
        if self.down:
            raise OrchestratorUnavailable("no answer")
        return SimpleNamespace(config_hash="h")


def test_ready_only_after_a_check_in_the_orchestrator_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOTILLA_DATA", str(tmp_path))
    orchestrator = Orchestrator()
    orchestrator.down = True
    thread = CheckInThread(orchestrator, RuntimeState(), tmp_path / ".runtime" / "alive", lambda _: None)  # type: ignore[arg-type]
    thread.beat()
    assert health.main([]) == 0  # alive: the process runs
    assert health.main(["--ready"]) == 1  # but its orchestrator never answered

    orchestrator.down = False
    thread.beat()
    assert health.main(["--ready"]) == 0

    stale = time.time() - health.FRESH_FOR_S - 1
    os.utime(tmp_path / ".runtime" / "ready", (stale, stale))
    orchestrator.down = True
    thread.beat()
    assert health.main([]) == 0 and health.main(["--ready"]) == 1


def test_an_unknown_argument_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert health.main(["--readiness"]) == 2
    assert "usage: python3 -m agent_runtime.health [--ready]" in capsys.readouterr().out


class FirstCheckIn:
    """Stands in for boot's client: answers the first check-in with `status`."""

    def __init__(self, status: int) -> None:
        self.status = status

    def checkin_over_http(self, _checkin: Any) -> RouteAnswer:
        return RouteAnswer(self.status, b'{"detail": "refused"}')


def test_the_accepted_first_check_in_makes_the_agent_ready_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The orchestrator may count the agent healthy from its first check-in on, before the
    # check-in thread has run: the readiness probe must pass from then too.
    monkeypatch.setenv("FLOTILLA_DATA", str(tmp_path))
    (tmp_path / ".runtime").mkdir()
    settings = SimpleNamespace(alive_file=tmp_path / ".runtime" / "alive")
    boot._first_checkin(FirstCheckIn(403), settings)  # type: ignore[arg-type]
    assert health.main(["--ready"]) == 1
    boot._first_checkin(FirstCheckIn(200), settings)  # type: ignore[arg-type]
    assert health.main(["--ready"]) == 0

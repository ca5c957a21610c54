"""Fail fast and say why, on the process runtime: a message to an agent whose unit cannot start
ends within seconds with the engine's reason; `up`'s report on agents that are not ready names
each one's state and what the engine says; `down -v` over a damaged unit record is one error
line that says what to do."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.cli.client import ApiClient
from orchestrator.cli.not_ready import not_ready_lines
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import free_port, run_flotilla

FLEET = """\
version: 1
fleet: fragile
agents:
  alpha:
    role: sleeps until it has work
"""
# Far above what a refusal takes to be said; far below the wait it replaces.
SAID_WITHIN_S = 30.0


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fleet whose sleeping agent's storage folder vanished: its process cannot start."""
    folder = tmp_path_factory.mktemp("fragile")
    (folder / "fleet.yaml").write_text(FLEET)
    try:
        started = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        shutil.rmtree(StatePaths.for_fleet_file(folder / "fleet.yaml").agent_storage("alpha"))
        yield folder
    finally:
        run_flotilla(folder, "down", "-v")


def test_send_to_an_agent_that_cannot_start_says_why_within_seconds(broken: Path) -> None:
    began = time.monotonic()
    sent = run_flotilla(broken, "send", "alpha", "are you there?", "--timeout", "240")
    took_s = time.monotonic() - began

    assert sent.returncode == 1, sent.stdout + sent.stderr
    assert took_s < SAID_WITHIN_S, f"took {took_s:.0f}s: {sent.stderr}"
    assert "agent 'alpha' cannot take the message" in sent.stderr
    assert "No such file or directory" in sent.stderr
    assert "stays queued" in sent.stderr and "flotilla events --agent alpha" in sent.stderr
    assert "Traceback" not in sent.stderr


def test_a_second_send_says_it_at_once(broken: Path) -> None:
    began = time.monotonic()
    sent = run_flotilla(broken, "send", "alpha", "still there?", "--timeout", "240")
    assert time.monotonic() - began < SAID_WITHIN_S
    assert sent.returncode == 1 and "cannot take the message" in sent.stderr


def test_the_not_ready_report_names_the_state_and_the_engines_reason(broken: Path) -> None:
    paths = StatePaths.for_fleet_file(broken / "fleet.yaml")
    endpoint = read_endpoint(paths)
    assert endpoint is not None
    client = ApiClient(endpoint)
    try:
        (line,) = not_ready_lines(client, "process", paths)
    finally:
        client.close()
    assert line.startswith("alpha: ") and "; engine: unit " in line


def test_down_v_over_a_damaged_unit_record_is_one_error_line_then_works(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    started = run_flotilla(tmp_path, "up", "-d", "--runtime", "process", "--port", str(free_port()))
    assert started.returncode == 0, started.stdout + started.stderr
    (record,) = (tmp_path / ".flotilla" / "process" / "units").glob("*.json")
    record.write_text('{"name": ')

    refused = run_flotilla(tmp_path, "down", "-v")

    assert refused.returncode == 1
    assert "Traceback" not in refused.stderr
    (error,) = [line for line in refused.stderr.splitlines() if line.strip()]
    assert error.startswith("error: the agent process record ") and str(record) in error
    assert "delete the file" in error and "run `flotilla down -v` again" in error
    record.unlink()
    again = run_flotilla(tmp_path, "down", "-v")
    assert again.returncode == 0, again.stderr
    assert "fleet 'fragile' is down" in again.stdout

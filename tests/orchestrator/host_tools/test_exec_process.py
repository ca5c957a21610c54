"""The exec tool on the process runtime, which cannot sandbox: it says so and refuses, unless the
operator allows unsandboxed commands for that agent in so many words."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.testing.cli import free_port, run_flotilla

FLEET = """\
version: 1
fleet: execproc
agents:
  fenced:
    role: would like to run code
    tools:
      exec: {timeout_s: 10}
  trusted:
    role: runs code on the host, as its operator allows
    tools:
      exec: {timeout_s: 2, allow_unsandboxed: true}
"""


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("exec-process")
    (folder / "fleet.yaml").write_text(FLEET)
    try:
        started = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v")


def send(folder: Path, agent: str, text: str) -> str:
    result = run_flotilla(folder, "send", agent, text, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def events(folder: Path, agent: str, kind: str) -> list[dict[str, Any]]:
    out = run_flotilla(folder, "events", "--agent", agent, "--json", "-n", "200").stdout
    return [event for event in json.loads(out) if event["type"] == kind]


def test_the_process_runtime_refuses_exec_and_says_why(fleet_dir: Path) -> None:
    reply = send(fleet_dir, "fenced", 'call exec {"command": "python3 -c \\"print(6*7)\\""}')
    assert "the process runtime cannot sandbox code" in reply and "42" not in reply
    assert "allow_unsandboxed: true" in reply
    (refused,) = events(fleet_dir, "fenced", "exec.refused")
    assert "cannot sandbox" in refused["data"]["reason"]
    assert events(fleet_dir, "fenced", "exec.ran") == []
    listed = events(fleet_dir, "fenced", "mcp.started")
    assert listed and "the process runtime cannot sandbox code" in json.dumps(listed[-1]["data"]["problems"])


def test_allowed_unsandboxed_it_runs_on_the_host_and_says_so(fleet_dir: Path) -> None:
    reply = send(fleet_dir, "trusted", 'call exec {"command": "python3 -c \\"print(6*7)\\""}')
    assert "exit code 0" in reply and "42" in reply
    (ran,) = events(fleet_dir, "trusted", "exec.ran")
    assert ran["data"]["sandboxed"] is False and ran["data"]["exit_code"] == 0


def test_unsandboxed_commands_still_end_at_their_time_cap(fleet_dir: Path) -> None:
    reply = send(fleet_dir, "trusted", 'call exec {"command": "sleep 600"}')
    assert "cut at the time cap of 2 s" in reply

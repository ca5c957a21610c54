"""`send` says why the reply is not coming: an approval waiting (with its id), a paused agent (at
once); the process runtime and the built-in test model, through the command line."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.testing.cli import free_port, run_flotilla, start_flotilla

FLEET = """\
version: 1
fleet: why
defaults:
  always_on: true
agents:
  writer:
    role: writes
    tools:
      rules:
        write_file: {approval: required}
  idle:
    role: waits
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("why")
    (folder / "fleet.yaml").write_text(FLEET)
    try:
        started = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v")


def send_in_background(folder: Path, agent: str, text: str, *extra: str) -> subprocess.Popen[str]:
    return start_flotilla(folder, "send", agent, text, *extra)


def test_send_names_the_approval_it_waits_for(folder: Path) -> None:
    waiting = send_in_background(folder, "writer", 'call write_file {"path": "a.md", "content": "x"}')
    assert waiting.stderr is not None
    line = waiting.stderr.readline()  # said while waiting, before any decision
    assert line.startswith("waiting for approval "), line
    approval_id = line.split()[3]
    assert f"flotilla approve {approval_id}" in line
    decided = run_flotilla(folder, "approve", approval_id)
    assert decided.returncode == 0, decided.stdout + decided.stderr
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, err
    assert "write_file returned" in out


def test_send_to_a_paused_agent_says_paused_at_once(folder: Path) -> None:
    assert run_flotilla(folder, "pause", "idle").returncode == 0
    try:
        started = time.monotonic()
        waiting = send_in_background(folder, "idle", "hello", "--timeout", "30")
        assert waiting.stderr is not None
        line = waiting.stderr.readline()
        assert time.monotonic() - started < 15
        assert "agent 'idle' is paused" in line and "flotilla resume idle" in line
        assert run_flotilla(folder, "resume", "idle").returncode == 0
        out, err = waiting.communicate(timeout=60)
        assert waiting.returncode == 0, err
        assert "] hello" in out
    finally:
        run_flotilla(folder, "resume", "idle")

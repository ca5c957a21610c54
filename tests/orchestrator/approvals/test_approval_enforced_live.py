"""The honest path still works with the orchestrator's own approval check: a real agent (process
runtime, the test model) calls update_workspace under `approval: required`, waits, the operator
approves through the CLI, and the write the orchestrator now checks goes through once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.testing.cli import free_port, run_flotilla, start_flotilla, wait_for

FLEET = """\
version: 1
fleet: approvals-live
agents:
  alpha:
    role: notes
    tools:
      rules:
        update_workspace: {approval: required}
"""
CALL = 'call update_workspace {"name": "USER.md", "content": "The user likes tea.\\n"}'


@pytest.fixture
def fleet_dir(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    try:
        started = run_flotilla(tmp_path, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        yield tmp_path
    finally:
        run_flotilla(tmp_path, "down", "-v")


def pending(folder: Path) -> list[dict[str, Any]]:
    listed = run_flotilla(folder, "approvals", "--json")
    assert listed.returncode == 0, listed.stderr
    items: list[dict[str, Any]] = json.loads(listed.stdout)
    return [item for item in items if item["state"] == "pending"]


def test_an_approved_update_workspace_call_is_written(fleet_dir: Path) -> None:
    send = start_flotilla(fleet_dir, "send", "alpha", CALL)
    try:
        wait_for(lambda: bool(pending(fleet_dir)), "the agent's approval item")
        [item] = pending(fleet_dir)
        assert item["tool"] == "update_workspace"
        approved = run_flotilla(fleet_dir, "approve", item["id"])
        assert approved.returncode == 0, approved.stdout + approved.stderr
        out, err = send.communicate(timeout=120)
    finally:
        send.kill()
    assert send.returncode == 0, out + err
    shown = run_flotilla(fleet_dir, "workspace", "cat", "alpha", "USER.md")
    assert shown.stdout == "The user likes tea.\n", shown.stdout + shown.stderr
    history = json.loads(run_flotilla(fleet_dir, "workspace", "history", "alpha", "USER.md", "--json").stdout)
    assert history["versions"][-1]["author"] == "agent"

"""MCP servers from PyPI (mcp-server-time, mcp-server-git) as agent tools, and human approval of tool
calls, on a whole fleet run by the process backend and driven through the `flotilla` command line.

The agents run the `test` model, whose `call TOOL {json}` directive makes a real tool call through
the agent's registry, so every call below travels agent -> gateway -> agent -> MCP server (or the
approval route) and back.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import free_port, run_flotilla, start_flotilla, wait_for

pytest.importorskip("mcp")
pytest.importorskip("mcp_server_time")
pytest.importorskip("mcp_server_git")

FLEET = """\
version: 1
fleet: mcptools
agents:
  clock:
    role: tells the time
    tools:
      mcp:
        - name: time
          command: [python3, -m, mcp_server_time, --local-timezone, UTC]
        - name: git
          command: [python3, -m, mcp_server_git, --repository, {repo}]
          allow: [git_status, git_log]
        - name: broken
          command: [no-such-mcp-server]
          timeout_s: 5
      rules:
        time__convert_time: {{approval: required}}
        write_file: {{approval: required}}
      approval_timeout: 10m
  boss:
    role: asks the helper, with the operator's leave
    talks_to: [helper]
    tools:
      rules:
        helper.echo: {{approval: required}}
  helper:
    role: echoes
    interface: |
      ---
      operations:
        - name: echo
          input: {{type: object, properties: {{text: {{type: string}}}}, required: [text]}}
          output: {{type: object}}
      ---
      Echoes what it is given.
  hasty:
    role: writes files, if allowed in time
    tools:
      rules:
        write_file: {{approval: required}}
      approval_timeout: 2s
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("repo")
    git = ["git", "-C", str(folder), "-c", "user.name=Test", "-c", "user.email=test@example.org"]
    subprocess.run([*git[:3], "init", "-q", "-b", "main"], check=True)
    (folder / "harbour.txt").write_text("tide tables\n")
    subprocess.run([*git, "add", "harbour.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "Tide tables for the harbour"], check=True)
    (folder / "untracked.txt").write_text("new\n")
    return folder


@pytest.fixture(scope="module")
def port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory, repo: Path, port: int) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("mcp-fleet")
    (folder / "fleet.yaml").write_text(FLEET.format(repo=repo))
    try:
        started = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(port))
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v")


def send(folder: Path, agent: str, text: str) -> str:
    result = run_flotilla(folder, "send", agent, text, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def send_in_background(folder: Path, agent: str, text: str) -> subprocess.Popen[str]:
    return start_flotilla(folder, "send", agent, text)


def approvals(folder: Path, *extra: str) -> list[dict[str, Any]]:
    result = run_flotilla(folder, "approvals", "--json", *extra)
    assert result.returncode == 0, result.stderr
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return found


def one_pending(folder: Path, agent: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = []

    def pending() -> bool:
        found[:] = [item for item in approvals(folder) if item["agent"] == agent]
        return len(found) == 1

    wait_for(pending, f"one approval item of {agent}", deadline_s=120)
    return found[0]


def turns(folder: Path, agent: str) -> list[dict[str, Any]]:
    result = run_flotilla(folder, "runs", agent, "--kind", "turn", "--json", "-n", "50")
    assert result.returncode == 0, result.stderr
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return found


def calls_of(folder: Path, agent: str, tool: str) -> list[dict[str, Any]]:
    return [call for run in turns(folder, agent) for call in run["tool_calls"] if call["name"] == tool]


def test_an_mcp_tool_from_pypi_answers_through_the_agent(fleet_dir: Path) -> None:
    reply = send(fleet_dir, "clock", 'call time__get_current_time {"timezone": "Europe/Paris"}')
    assert "time__get_current_time returned:" in reply
    assert '"timezone": "Europe/Paris"' in reply and '"datetime": "20' in reply
    (call,) = calls_of(fleet_dir, "clock", "time__get_current_time")
    assert call["ok"] is True and call["source"] == "mcp" and call["approval"] is None


def test_the_git_server_reads_a_repository_made_here(fleet_dir: Path, repo: Path) -> None:
    status = send(fleet_dir, "clock", f'call git__git_status {{"repo_path": "{repo}"}}')
    assert "git__git_status returned:" in status and "untracked.txt" in status
    log = send(fleet_dir, "clock", f'call git__git_log {{"repo_path": "{repo}", "max_count": 5}}')
    assert "Tide tables for the harbour" in log


def test_allow_limits_the_tools_offered_and_a_broken_server_is_left_out(fleet_dir: Path, repo: Path) -> None:
    reply = send(
        fleet_dir, "clock", f'call git__git_add {{"repo_path": "{repo}", "files": ["untracked.txt"]}}'
    )
    assert "cannot call git__git_add: not in the tool catalog" in reply
    assert "time__get_current_time" in reply and "git__git_status" in reply
    assert "broken__" not in reply
    events = run_flotilla(fleet_dir, "events", "--agent", "clock", "--json", "-n", "200").stdout
    started = [event for event in json.loads(events) if event["type"] == "mcp.started"]
    assert started and "no-such-mcp-server" in json.dumps(started[-1]["data"]["problems"])


def test_an_approved_call_runs_and_the_loop_goes_on(fleet_dir: Path) -> None:
    arguments = '{"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}'
    waiting = send_in_background(fleet_dir, "clock", f"call time__convert_time {arguments}")
    item = one_pending(fleet_dir, "clock")
    assert item["tool"] == "time__convert_time" and item["arguments"]["target_timezone"] == "Asia/Tokyo"
    listed = run_flotilla(fleet_dir, "approvals").stdout
    assert item["id"] in listed and "time__convert_time" in listed
    decided = run_flotilla(fleet_dir, "approve", item["id"])
    assert decided.returncode == 0 and "approved" in decided.stdout, decided.stderr
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, err
    assert "time__convert_time returned:" in out and "21:00" in out
    (call,) = calls_of(fleet_dir, "clock", "time__convert_time")
    assert call["approval"] == "approved" and call["approval_id"] == item["id"] and call["ok"] is True
    events = run_flotilla(fleet_dir, "events", "--json", "-n", "200").stdout
    assert '"approval.requested"' in events and '"approval.decided"' in events
    again = run_flotilla(fleet_dir, "deny", item["id"])
    assert again.returncode != 0 and "already approved" in again.stdout + again.stderr


def test_a_peer_operation_waits_for_approval(fleet_dir: Path) -> None:
    waiting = send_in_background(fleet_dir, "boss", 'ask helper echo {"text": "ping"}')
    item = one_pending(fleet_dir, "boss")
    assert item["tool"] == "helper.echo" and item["arguments"]["input"] == {"text": "ping"}
    assert run_flotilla(fleet_dir, "approve", item["id"]).returncode == 0
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, err
    assert "ask_agent returned:" in out and "ERROR" not in out
    (call,) = calls_of(fleet_dir, "boss", "ask_agent")
    assert call["source"] == "peer" and call["approval"] == "approved" and call["ok"] is True


def test_a_denied_call_is_not_run_and_the_model_is_told_why(fleet_dir: Path) -> None:
    waiting = send_in_background(
        fleet_dir, "clock", 'call write_file {"path": "denied.md", "content": "should not exist"}'
    )
    item = one_pending(fleet_dir, "clock")
    assert item["tool"] == "write_file"
    assert run_flotilla(fleet_dir, "deny", item["id"], "--reason", "not on a Tuesday").returncode == 0
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, err
    assert "DENIED: write_file was not run: the operator denied it (not on a Tuesday)" in out
    listing = run_flotilla(fleet_dir, "workspace", "ls", "clock").stdout
    assert "denied.md" not in listing
    (call,) = calls_of(fleet_dir, "clock", "write_file")
    assert call["approval"] == "denied" and call["ok"] is False


def test_an_undecided_call_is_denied_when_its_timeout_passes(fleet_dir: Path) -> None:
    reply = send(fleet_dir, "hasty", 'call write_file {"path": "late.md", "content": "too late"}')
    assert "DENIED: write_file was not run: no operator decided in time" in reply
    (item,) = [i for i in approvals(fleet_dir, "--all") if i["agent"] == "hasty"]
    assert item["state"] == "expired"
    assert "late.md" not in run_flotilla(fleet_dir, "workspace", "ls", "hasty").stdout


def test_a_wait_survives_an_orchestrator_restart(fleet_dir: Path, port: int) -> None:
    waiting = send_in_background(
        fleet_dir, "clock", 'call write_file {"path": "after-restart.md", "content": "approved later"}'
    )
    item = one_pending(fleet_dir, "clock")
    paths = StatePaths.for_fleet_file(fleet_dir / "fleet.yaml")
    endpoint = read_endpoint(paths)
    assert endpoint is not None
    subprocess.run(["kill", str(endpoint.pid)], check=True)
    wait_for(lambda: read_endpoint(paths) is None, "the orchestrator to stop")
    waiting.communicate(timeout=60)  # its orchestrator went away; the item stays in the inbox
    started = run_flotilla(fleet_dir, "up", "-d", "--runtime", "process", "--port", str(port))
    assert started.returncode == 0, started.stdout + started.stderr
    (still,) = [i for i in approvals(fleet_dir) if i["agent"] == "clock"]
    assert still["id"] == item["id"]
    assert run_flotilla(fleet_dir, "approve", item["id"]).returncode == 0
    wait_for(
        lambda: any(c["approval_id"] == item["id"] for c in calls_of(fleet_dir, "clock", "write_file")),
        "the approved call to be recorded",
        deadline_s=120,
    )
    (call,) = [c for c in calls_of(fleet_dir, "clock", "write_file") if c["approval_id"] == item["id"]]
    assert call["approval"] == "approved" and call["ok"] is True
    (run,) = [
        r for r in turns(fleet_dir, "clock") if any(c["approval_id"] == item["id"] for c in r["tool_calls"])
    ]
    assert "after-restart.md" in run["files_changed"]

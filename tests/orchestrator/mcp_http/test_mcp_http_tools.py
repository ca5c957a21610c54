"""HTTP MCP servers reached only through the orchestrator: a real server (the official SDK's MCPServer
over streamable HTTP, demanding a bearer token) started here on 127.0.0.1, a fleet run by the process
backend whose agents call its tools with the `test` model's `call TOOL {json}` directive.

Every call travels agent -> orchestrator -> MCP server and back; the token is in the orchestrator's
environment only.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import free_port, run_flotilla, start_flotilla, wait_for
from tests.orchestrator.mcp_servers.running import SearchServer

pytest.importorskip("mcp")

TOKEN = f"sk-search-{secrets.token_hex(12)}"

FLEET = """\
version: 1
fleet: mcphttp
agents:
  finder:
    role: finds harbour documents
    tools:
      mcp:
        - name: search
          url: "http://127.0.0.1:{port}/mcp"
          headers: {{Authorization: "Bearer ${{SEARCH_TOKEN}}"}}
          allow: [find]
          timeout_s: 10
        - name: gone
          url: "http://127.0.0.1:{dead_port}/mcp"
          timeout_s: 5
  careful:
    role: searches with the operator's leave
    tools:
      mcp:
        - name: search
          url: "http://127.0.0.1:{port}/mcp"
          headers: {{Authorization: "Bearer ${{SEARCH_TOKEN}}"}}
          approval: required
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SearchServer]:
    running = SearchServer(free_port(), TOKEN, tmp_path_factory.mktemp("search") / "seen-tokens")
    running.start()
    try:
        yield running
    finally:
        running.stop()


def operator_env() -> dict[str, str]:
    return {**os.environ, "SEARCH_TOKEN": TOKEN}


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory, server: SearchServer) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("mcp-http-fleet")
    (folder / "fleet.yaml").write_text(FLEET.format(port=server.port, dead_port=free_port()))
    try:
        started = run_flotilla(
            folder, "up", "-d", "--runtime", "process", "--port", str(free_port()), env=operator_env()
        )
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v", env=operator_env())


def send(folder: Path, agent: str, text: str) -> str:
    result = run_flotilla(folder, "send", agent, text, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def events(folder: Path, agent: str) -> list[dict[str, Any]]:
    out = run_flotilla(folder, "events", "--agent", agent, "--json", "-n", "500").stdout
    found: list[dict[str, Any]] = json.loads(out)
    return found


def calls_of(folder: Path, agent: str, tool: str) -> list[dict[str, Any]]:
    result = run_flotilla(folder, "runs", agent, "--kind", "turn", "--json", "-n", "50")
    assert result.returncode == 0, result.stderr
    return [call for run in json.loads(result.stdout) for call in run["tool_calls"] if call["name"] == tool]


def agent_call(folder: Path, agent: str, name: str, arguments: dict[str, Any]) -> httpx.Response:
    """A call made with the agent's own token, as an agent that ignores its catalog would make it."""
    paths = StatePaths.for_fleet_file(folder / "fleet.yaml")
    endpoint = read_endpoint(paths)
    assert endpoint is not None
    return httpx.post(
        f"{endpoint.url}/agent/v1/tools/call",
        json={"name": name, "arguments": arguments},
        headers={"authorization": f"Bearer {paths.token_file(agent).read_text().strip()}"},
        timeout=60,
    )


def test_a_tool_of_an_http_server_answers_through_the_orchestrator(
    fleet_dir: Path, server: SearchServer
) -> None:
    reply = send(fleet_dir, "finder", 'call search__find {"query": "tide"}')
    assert "search__find returned:" in reply and "tide-tables.md" in reply
    assert TOKEN in server.tokens_seen()
    (call,) = calls_of(fleet_dir, "finder", "search__find")
    assert call["ok"] is True and call["source"] == "orchestrator_mcp"
    called = [e for e in events(fleet_dir, "finder") if e["type"] == "mcp.called"]
    assert called and called[-1]["data"]["tool"] == "search__find" and called[-1]["data"]["ok"] is True


def test_the_schema_is_offered_and_a_server_down_at_start_is_named(fleet_dir: Path) -> None:
    reply = send(fleet_dir, "finder", 'call search__find {"text": "no query"}')
    assert "invalid arguments for search__find" in reply and "'query' is a required property" in reply
    started = [e for e in events(fleet_dir, "finder") if e["type"] == "mcp.started"]
    assert started and "MCP server gone" in json.dumps(started[-1]["data"]["problems"])
    unreachable = [e for e in events(fleet_dir, "finder") if e["type"] == "mcp.unreachable"]
    assert any(e["data"]["server"] == "gone" for e in unreachable)


def test_a_tool_outside_the_allow_list_is_neither_offered_nor_run(fleet_dir: Path) -> None:
    reply = send(fleet_dir, "finder", "call search__drop_index {}")
    assert "cannot call search__drop_index: not in the tool catalog" in reply
    refused = agent_call(fleet_dir, "finder", "search__drop_index", {})
    assert refused.status_code == 403
    assert "search__drop_index is not in the allow-list of MCP server search" in refused.json()["message"]
    elsewhere = agent_call(fleet_dir, "finder", "time__get_current_time", {})
    assert elsewhere.status_code == 403 and "not a tool of an HTTP MCP server" in elsewhere.json()["message"]


def test_a_call_needing_approval_is_refused_without_one_and_runs_once_approved(fleet_dir: Path) -> None:
    refused = agent_call(fleet_dir, "careful", "search__find", {"query": "moorings"})
    assert refused.status_code == 403 and "needs an operator's approval" in refused.json()["message"]
    waiting = start_flotilla(fleet_dir, "send", "careful", 'call search__find {"query": "fees"}')
    pending: list[dict[str, Any]] = []

    def asked() -> bool:
        out = run_flotilla(fleet_dir, "approvals", "--json").stdout
        pending[:] = [item for item in json.loads(out) if item["agent"] == "careful"]
        return len(pending) == 1

    wait_for(asked, "the approval item of careful", deadline_s=120)
    assert pending[0]["tool"] == "search__find"
    assert run_flotilla(fleet_dir, "approve", pending[0]["id"]).returncode == 0
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, err
    assert "search__find returned:" in out and "fees.md" in out
    (call,) = calls_of(fleet_dir, "careful", "search__find")
    assert call["approval"] == "approved" and call["source"] == "orchestrator_mcp" and call["ok"] is True


def test_the_token_stays_with_the_orchestrator(fleet_dir: Path) -> None:
    secret = TOKEN.encode()
    for path in fleet_dir.rglob("*"):
        if path.is_file():
            assert secret not in path.read_bytes(), f"the token is in {path}"
    agents = [pid for pid in _pids() if b"agent_runtime" in _read(pid, "cmdline")]
    assert agents, "no agent process found"
    for pid in agents:
        assert secret not in _read(pid, "environ")


def test_a_server_that_went_down_gives_the_agent_an_error_and_the_operator_an_event(
    fleet_dir: Path, server: SearchServer
) -> None:
    server.stop()
    try:
        reply = send(fleet_dir, "finder", 'call search__find {"query": "storm"}')
        assert "ERROR: search__find failed: MCP server search" in reply and "could not" in reply
        unreachable = [e for e in events(fleet_dir, "finder") if e["type"] == "mcp.unreachable"]
        assert any(e["data"]["server"] == "search" for e in unreachable)
        calls = calls_of(fleet_dir, "finder", "search__find")
        assert calls[0]["ok"] is False and calls[0]["source"] == "orchestrator_mcp"
    finally:
        server.start()


def _pids() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


def _read(pid: int, name: str) -> bytes:
    try:
        return (Path("/proc") / str(pid) / name).read_bytes()
    except OSError:
        return b""

"""`flotilla history`: an agent's turns, asked of the agent over its real channel, joined with
the orchestrator's run records and context events; followed live by a separate process."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from agent_runtime.protocol import RunOutcome, RunRecord, ToolCallRecord
from agent_runtime.workspace.history import HistoryLog, Turn
from orchestrator.api.app import create_app
from orchestrator.cli.main import cli
from orchestrator.config.loader import load_fleet
from orchestrator.scheduler.runs import RunStore
from orchestrator.services import Services
from orchestrator.state.endpoint import Endpoint, write_endpoint
from orchestrator.testing.agent_link import connect_agent
from orchestrator.testing.cli import start_flotilla
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import attach_subsystems, core_services, fleet_manager

FLEET = """\
version: 1
fleet: histtest
agents:
  alpha:
    role: researcher
  beta:
    role: writer
"""
CALL = {
    "id": "call_9",
    "type": "function",
    "function": {"name": "memory_save", "arguments": '{"text": "tides"}'},
}


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(textwrap.dedent(FLEET))
    core = core_services(load_fleet(fleet_file), FakeBackend())
    core.operator_token = core.tokens.mint_operator()
    built = attach_subsystems(core, fleet_manager(core))
    yield built
    built.db.close()


@pytest.fixture
def url(services: Services) -> Iterator[str]:
    with serve_app(create_app(services)) as served, connect_agent(services, served, "alpha"):
        write_endpoint(services.paths, Endpoint(url=served, token=services.operator_token, pid=os.getpid()))
        yield served


def log_turn(services: Services, item: str, *, tool: bool, run: bool) -> HistoryLog:
    log = HistoryLog(services.paths.agent_storage("alpha"))
    start = datetime.now(UTC)
    log.append(Turn(role="user", content=f"request {item}", item_id=item))
    if tool:
        log.append(Turn(role="assistant", content="", tool_calls=(CALL,), item_id=item))
        log.append(
            Turn(role="tool", content="saved fact 3", tool_call_id="call_9", name="memory_save", item_id=item)
        )
    log.append(Turn(role="assistant", content=f"answer {item}", item_id=item))
    if run:
        RunStore(services.db).add_turn(
            RunRecord(
                id=f"run-{item}",
                agent="alpha",
                trigger="operator",
                item_id=item,
                model="test",
                started_at=start,
                finished_at=start + timedelta(seconds=1.5),
                tokens_in=120,
                tokens_out=30,
                cost_usd=0.0012,
                outcome=RunOutcome.OK,
            )
        )
    return log


def test_the_route_joins_messages_runs_and_context_marks(services: Services, url: str) -> None:
    log_turn(services, "item-one", tool=False, run=True)
    services.events.publish("compaction.done", agent="alpha", dropped=6, kept=2)
    log_turn(services, "item-two", tool=True, run=True)
    headers = {"authorization": f"Bearer {services.operator_token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        body = client.get("/api/v1/agents/alpha/history", params={"limit": 5}).json()
        assert [turn["item_id"] for turn in body["turns"]] == ["item-one", "item-two"]
        first, second = body["turns"]
        assert [mark["type"] for mark in first["marks"]] == ["compaction.done"]
        assert second["marks"] == []
        assert second["run"]["tokens_in"] == 120 and second["run"]["duration_s"] == 1.5
        assert second["messages"][1]["tool_calls"][0]["arguments"] == '{"text": "tides"}'
        assert second["messages"][2]["content"] == "saved fact 3"
        only_last = client.get("/api/v1/agents/alpha/history", params={"limit": 1}).json()
        assert [turn["item_id"] for turn in only_last["turns"]] == ["item-two"] and only_last["earlier"]
        assert client.get("/api/v1/agents/ghost/history").status_code == 404
        assert httpx.get(f"{url}/api/v1/agents/alpha/history").status_code == 401


def test_history_command_prints_each_turn(services: Services, url: str) -> None:
    log_turn(services, "item-two", tool=True, run=True)
    fleet = ["-f", str(services.fleet.path)]
    result = CliRunner().invoke(cli, ["history", *fleet, "alpha", "-n", "3"])
    assert result.exit_code == 0, result.output
    assert "operator · test · 120→30 tokens · $0.0012 · 1.50 s · ok" in result.output
    assert '→ memory_save({"text": "tides"})' in result.output
    assert "← memory_save: saved fact 3" in result.output
    as_json = CliRunner().invoke(cli, ["history", *fleet, "alpha", "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.output)["turns"][0]["run"]["model"] == "test"


def test_history_names_a_host_tool_call_as_such(services: Services, url: str) -> None:
    """A call of a tool the orchestrator ran (exec) is marked as a host tool; a built-in is not."""
    log = HistoryLog(services.paths.agent_storage("alpha"))
    start = datetime.now(UTC)
    exec_call = {"id": "call_1", "type": "function", "function": {"name": "exec", "arguments": "{}"}}
    log.append(Turn(role="user", content="run it", item_id="item-host"))
    log.append(Turn(role="assistant", content="", tool_calls=(exec_call, CALL), item_id="item-host"))
    log.append(Turn(role="assistant", content="done", item_id="item-host"))
    calls = [ToolCallRecord(name="exec", ok=True, source="host"), ToolCallRecord(name="memory_save", ok=True)]
    RunStore(services.db).add_turn(
        RunRecord(
            id="run-host",
            agent="alpha",
            trigger="operator",
            item_id="item-host",
            started_at=start,
            finished_at=start,
            outcome=RunOutcome.OK,
            tool_calls=calls,
        )
    )
    result = CliRunner().invoke(cli, ["history", "-f", str(services.fleet.path), "alpha", "-n", "1"])
    assert result.exit_code == 0, result.output
    assert "→ exec({}) [host tool]" in result.output
    assert '→ memory_save({"text": "tides"})\n' in result.output
    as_json = CliRunner().invoke(cli, ["history", "-f", str(services.fleet.path), "alpha", "--json"])
    assert json.loads(as_json.output)["turns"][-1]["run"]["tool_sources"] == {"exec": "host"}


def test_a_run_record_written_before_host_tools_had_their_source_still_reads() -> None:
    old = {
        "id": "run-old",
        "agent": "alpha",
        "trigger": "operator",
        "started_at": "2026-11-01T10:00:00Z",
        "finished_at": "2026-11-01T10:00:01Z",
        "outcome": "ok",
        "tool_calls": [{"name": "exec", "ok": True, "source": "orchestrator_mcp"}],
    }
    (call,) = RunRecord.model_validate(old).tool_calls
    assert call.source == "orchestrator_mcp"


def test_history_follow_prints_new_messages_and_the_finished_run(services: Services, url: str) -> None:
    log_turn(services, "item-one", tool=False, run=True)
    fleet_file = services.fleet.path
    with start_flotilla(
        fleet_file.parent, "history", "alpha", "--follow", file=fleet_file.name, stderr=subprocess.STDOUT
    ) as follower:
        assert follower.stdout is not None
        try:
            assert "answer item-one" in _read_until(follower.stdout, "answer item-one")
            log_turn(services, "item-live", tool=True, run=False)
            assert "answer item-live" in _read_until(follower.stdout, "answer item-live")
            RunStore(services.db).add_turn(
                RunRecord(
                    id="run-live",
                    agent="alpha",
                    trigger="peer",
                    item_id="item-live",
                    started_at=datetime.now(UTC),
                    finished_at=datetime.now(UTC),
                    outcome=RunOutcome.ERROR,
                    detail="timed out",
                )
            )
            summary = _read_until(follower.stdout, "└ item item-live").splitlines()[-1]
            assert "peer" in summary and "error (timed out)" in summary
        finally:
            follower.terminate()


def _read_until(stream: object, marker: str, deadline_s: float = 60) -> str:
    """Lines from the follower until one holds `marker` (the follower polls once a second)."""
    seen: list[str] = []
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        line = stream.readline()  # type: ignore[attr-defined]
        if not line:
            break
        seen.append(line.rstrip("\n"))
        if marker in line:
            return "\n".join(seen)
    raise AssertionError(f"the follower never printed {marker!r}; it printed: {seen}")


def test_an_agents_text_cannot_drive_the_operators_terminal(services: Services, url: str) -> None:
    log = HistoryLog(services.paths.agent_storage("alpha"))
    log.append(Turn(role="assistant", content="ok\x1b[2J\x1b]0;pwned\x07 done", item_id="item-esc"))
    result = CliRunner().invoke(cli, ["history", "-f", str(services.fleet.path), "alpha"])
    assert result.exit_code == 0, result.output
    assert "\x1b[2J" not in result.output and "\x07" not in result.output
    assert "ok\N{REPLACEMENT CHARACTER}[2J" in result.output

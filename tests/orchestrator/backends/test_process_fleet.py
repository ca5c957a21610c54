"""A whole fleet on the process backend, driven through the `flotilla` command line."""

from __future__ import annotations

import json
import os
import platform
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.backends.process import ProcessBackend
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import fleet_status, free_port, run_flotilla, wait_for

FLEET = """\
version: 1
fleet: proc
defaults:
  always_on: true
agents:
  alpha:
    role: first
    talks_to: [beta]
  beta:
    role: second
"""


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("proc-fleet")
    (folder / "fleet.yaml").write_text(FLEET)
    try:
        started = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v")


def test_up_starts_every_agent_and_ps_says_isolation_is_weak(fleet_dir: Path) -> None:
    agents = fleet_status(fleet_dir)
    assert sorted(agents) == ["alpha", "beta"]
    assert all(a["health"] == "healthy" for a in agents.values())
    table = run_flotilla(fleet_dir, "ps").stdout
    assert "isolation weak" in table


def test_ps_shows_the_local_host_as_each_agents_node(fleet_dir: Path) -> None:
    assert {a["node"] for a in fleet_status(fleet_dir).values()} == {platform.node()}
    header = run_flotilla(fleet_dir, "ps").stdout
    assert "node" in header and platform.node() in header


def test_move_says_the_process_runtime_has_no_other_node(fleet_dir: Path) -> None:
    result = run_flotilla(fleet_dir, "move", "alpha", "--node", platform.node())
    assert result.returncode != 0
    assert "the process runtime runs every agent on this machine" in result.stdout + result.stderr
    assert fleet_status(fleet_dir)["alpha"]["health"] == "healthy"


def test_send_gets_the_reply(fleet_dir: Path) -> None:
    result = run_flotilla(fleet_dir, "send", "beta", "good morning")
    assert result.returncode == 0, result.stderr
    assert "[test model]" in result.stdout and "good morning" in result.stdout


def test_send_json_prints_one_document(fleet_dir: Path) -> None:
    result = run_flotilla(fleet_dir, "send", "--json", "beta", "good evening")
    assert result.returncode == 0, result.stderr
    reply = json.loads(result.stdout)
    assert reply["agent"] == "beta" and reply["ok"] is True
    assert "good evening" in reply["text"]
    assert len(reply["item_id"]) == 32


def test_chat_refuses_an_unknown_agent_before_reading_input(fleet_dir: Path) -> None:
    chat = run_flotilla(fleet_dir, "chat", "ghost", stdin="hello\n", timeout=60)
    assert chat.returncode == 2
    assert "no agent 'ghost'" in chat.stderr and "alpha, beta" in chat.stderr
    assert "you>" not in chat.stdout


def test_chat_talks_until_an_empty_line(fleet_dir: Path) -> None:
    chat = run_flotilla(fleet_dir, "chat", "alpha", stdin="first question\n\n", timeout=120)
    assert chat.returncode == 0, chat.stderr
    assert "alpha> [test model]" in chat.stdout and "first question" in chat.stdout


def test_a_killed_agent_process_is_restarted(fleet_dir: Path) -> None:
    backend = ProcessBackend(StatePaths.for_fleet_file(fleet_dir / "fleet.yaml").root / "process")
    (unit,) = [u for u in backend.list({}) if u.agent == "alpha"]
    record = json.loads((backend._units / f"{unit.id}.json").read_text())
    os.kill(record["pid"], signal.SIGKILL)
    wait_for(lambda: fleet_status(fleet_dir)["alpha"]["restarts"] == 1, "alpha to be restarted")
    wait_for(lambda: fleet_status(fleet_dir)["alpha"]["health"] == "healthy", "alpha to check in again")


def test_a_second_orchestrator_on_a_taken_port_fails_clearly(fleet_dir: Path, tmp_path: Path) -> None:
    endpoint = json.loads((fleet_dir / ".flotilla" / "endpoint.json").read_text())
    port = endpoint["url"].rsplit(":", 1)[1]
    (tmp_path / "fleet.yaml").write_text(FLEET.replace("fleet: proc", "fleet: other"))
    result = run_flotilla(tmp_path, "up", "-d", "--runtime", "process", "--port", port)
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr
    assert not list((tmp_path / ".flotilla" / "process" / "units").glob("*.json"))


def test_an_invalid_fleet_starts_nothing(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET.replace("talks_to: [beta]", "talks_to: [gamma]"))
    result = run_flotilla(tmp_path, "up", "-d", "--runtime", "process", "--port", str(free_port()))
    assert result.returncode == 2
    assert "unknown agent 'gamma' in talks_to" in result.stderr
    assert not (tmp_path / ".flotilla").exists()


def test_commands_without_a_running_orchestrator_say_how_to_start_it(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    result = run_flotilla(tmp_path, "ps")
    assert result.returncode == 3  # the documented exit code for "not running"
    assert "no orchestrator is running" in result.stderr and "flotilla up" in result.stderr


def test_a_hibernated_agent_is_woken_to_answer_the_operators_memory_command(tmp_path: Path) -> None:
    """Memory lives in the agent's own storage: asking for it wakes a hibernated agent."""
    (tmp_path / "fleet.yaml").write_text(
        "version: 1\nfleet: sleepy\nagents:\n  dozer:\n    role: sleeps\n    hibernate_after: 1m\n"
    )
    try:
        started = run_flotilla(tmp_path, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        wait_for(lambda: fleet_status(tmp_path)["dozer"]["hibernated"] is True, "the agent to hibernate")
        added = run_flotilla(tmp_path, "memory", "add", "dozer", "The tide turns at six")
        assert added.returncode == 0, added.stdout + added.stderr
        assert "saved as #1" in added.stdout
        assert fleet_status(tmp_path)["dozer"]["hibernated"] is False
        storage = StatePaths.for_fleet_file(tmp_path / "fleet.yaml").agent_storage("dozer")
        assert (storage / "memory.db").is_file()
    finally:
        run_flotilla(tmp_path, "down", "-v")

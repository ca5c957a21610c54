"""The exec tool as an operator and an agent use it: a docker fleet whose agents call `exec` with the
`test` model's `call exec {json}` directive. Every call runs in a throwaway container started by
the orchestrator, is an event and a run-record entry, shows in `flotilla history`, and writes
its output files back as new versions authored by the agent."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator.backends.docker_sandbox import LABEL_SANDBOX_OF
from orchestrator.images.build import ImageBuildResult
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import fleet_status, free_port, run_flotilla, start_flotilla, wait_for
from tests.docker_fixtures import unique

pytestmark = pytest.mark.docker

FLEET = """\
version: 1
fleet: {name}
runtime: docker
agents:
  researcher:
    role: runs small scripts
    resources: {{ memory: 192m }}
    tools:
      exec: {{timeout_s: 10}}
  careful:
    role: runs scripts with the operator's leave
    resources: {{ memory: 192m }}
    tools:
      exec: {{timeout_s: 10, pids: 32}}
      rules: {{exec: {{approval: required}}}}
"""


@pytest.fixture(scope="module")
def fleet_name() -> str:
    return unique("exec")


@pytest.fixture(scope="module")
def fleet_dir(
    tmp_path_factory: pytest.TempPathFactory, agent_image: ImageBuildResult, fleet_name: str
) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("exec-fleet")
    (folder / "fleet.yaml").write_text(FLEET.format(name=fleet_name))
    try:
        started = run_flotilla(folder, "up", "-d", "--port", str(free_port()), timeout=900)
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v")


def send(folder: Path, agent: str, text: str) -> str:
    result = run_flotilla(folder, "send", agent, text, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def events(folder: Path, agent: str, kind: str) -> list[dict[str, Any]]:
    out = run_flotilla(folder, "events", "--agent", agent, "--json", "-n", "500").stdout
    return [event for event in json.loads(out) if event["type"] == kind]


def exec_calls(folder: Path, agent: str) -> list[dict[str, Any]]:
    result = run_flotilla(folder, "runs", agent, "--kind", "turn", "--json", "-n", "50")
    assert result.returncode == 0, result.stderr
    return [call for run in json.loads(result.stdout) for call in run["tool_calls"] if call["name"] == "exec"]


def agent_call(folder: Path, agent: str, arguments: dict[str, Any]) -> httpx.Response:
    """A call made with the agent's own token, as an agent that skips its approval gate would."""
    paths = StatePaths.for_fleet_file(folder / "fleet.yaml")
    endpoint = read_endpoint(paths)
    assert endpoint is not None
    return httpx.post(
        f"{endpoint.url}/agent/v1/tools/call",
        json={"name": "exec", "arguments": arguments},
        headers={"authorization": f"Bearer {paths.token_file(agent).read_text().strip()}"},
        timeout=60,
    )


def test_exec_answers_print_6_times_7(fleet_dir: Path, fleet_name: str, docker_client: Any) -> None:
    reply = send(fleet_dir, "researcher", 'call exec {"command": "python3 -c \\"print(6*7)\\""}')
    assert "exec returned: exit code 0" in reply and "42" in reply
    (ran,) = events(fleet_dir, "researcher", "exec.ran")[-1:]
    data = ran["data"]
    assert data["command"] == 'python3 -c "print(6*7)"' and data["exit_code"] == 0
    assert data["stdout_bytes"] == 3 and data["sandboxed"] is True and data["duration_s"] > 0
    runs = json.loads(run_flotilla(fleet_dir, "runs", "researcher", "--kind", "turn", "--json").stdout)
    (run,) = [run for run in runs if run["item_id"] == data["item_id"]]
    (call,) = run["tool_calls"]
    assert call["name"] == "exec" and call["ok"] is True and call["source"] == "host"
    shown = run_flotilla(fleet_dir, "history", "researcher", "-n", "1").stdout
    assert "→ exec(" in shown and "← exec: exit code 0" in shown
    sandboxes = {"label": f"{LABEL_SANDBOX_OF}={fleet_name}/researcher"}
    assert docker_client.containers.list(all=True, filters=sandboxes) == []


def test_a_workspace_file_goes_in_and_an_output_comes_back_as_a_new_version(fleet_dir: Path) -> None:
    before = json.loads(
        run_flotilla(fleet_dir, "workspace", "history", "researcher", "MEMORY.md", "--json").stdout
    )
    command = "(cat /workspace/MEMORY.md; echo '- exec counted 3 harbours') > MEMORY.md; wc -l < MEMORY.md"
    arguments = json.dumps({"command": command, "files": ["MEMORY.md"], "outputs": ["MEMORY.md"]})
    reply = send(fleet_dir, "researcher", f"call exec {arguments}")
    assert "MEMORY.md: written as version" in reply
    history = json.loads(
        run_flotilla(fleet_dir, "workspace", "history", "researcher", "MEMORY.md", "--json").stdout
    )
    assert len(history["versions"]) == len(before["versions"]) + 1
    newest = history["versions"][-1]
    assert newest["author"] == "agent" and newest["reason"].startswith(
        "exec output: (cat /workspace/MEMORY.md"
    )
    content = run_flotilla(fleet_dir, "workspace", "cat", "researcher", "MEMORY.md").stdout
    assert content.rstrip().endswith("- exec counted 3 harbours")
    (ran,) = events(fleet_dir, "researcher", "exec.ran")[-1:]
    assert ran["data"]["files"] == ["MEMORY.md"] and ran["data"]["outputs"] == {
        "MEMORY.md": newest["version"]
    }


def test_a_failed_command_writes_nothing_back(fleet_dir: Path) -> None:
    before = json.loads(
        run_flotilla(fleet_dir, "workspace", "history", "researcher", "MEMORY.md", "--json").stdout
    )
    arguments = json.dumps({"command": "echo half > MEMORY.md; exit 3", "outputs": ["MEMORY.md"]})
    reply = send(fleet_dir, "researcher", f"call exec {arguments}")
    assert "exit code 3" in reply and "MEMORY.md: not written: the command did not succeed" in reply
    after = json.loads(
        run_flotilla(fleet_dir, "workspace", "history", "researcher", "MEMORY.md", "--json").stdout
    )
    assert after == before


def test_a_read_only_file_is_not_written_back(fleet_dir: Path) -> None:
    arguments = json.dumps({"command": "echo mine > SYSTEM.md", "outputs": ["SYSTEM.md"]})
    reply = send(fleet_dir, "researcher", f"call exec {arguments}")
    assert "SYSTEM.md: not written:" in reply and "read-only" in reply


def test_a_fork_bomb_leaves_the_agent_and_the_host_fine(fleet_dir: Path) -> None:
    arguments = json.dumps({"command": "bomb() { bomb | bomb & }; bomb; sleep 60", "timeout_s": 5})
    reply = send(fleet_dir, "researcher", f"call exec {arguments}")
    # The pid cap stops the bomb (the shell cannot even start `sleep`), or the time cap does.
    assert "exec returned: ERROR" in reply
    assert "Cannot fork" in reply or "cut at the time cap of 5 s" in reply
    assert "still there" in send(fleet_dir, "researcher", "still there")
    assert fleet_status(fleet_dir)["researcher"]["state"] == "running"
    assert subprocess.run(["true"], check=False).returncode == 0


def test_bad_arguments_are_named(fleet_dir: Path) -> None:
    reply = agent_call(fleet_dir, "researcher", {"command": "true", "python": "pass"})
    assert reply.status_code == 200 and reply.json()["ok"] is False
    assert "give either command" in reply.json()["output"]
    reply = agent_call(fleet_dir, "researcher", {"command": "true", "files": ["../../etc/passwd"]})
    assert "is not a workspace file" in reply.json()["output"]
    refused = events(fleet_dir, "researcher", "exec.refused")
    assert refused and "is not a workspace file" in refused[-1]["data"]["reason"]


def test_exec_needing_approval_runs_only_once_approved(fleet_dir: Path) -> None:
    refused = agent_call(fleet_dir, "careful", {"command": "echo sneaky"})
    assert refused.status_code == 403 and "exec needs an operator's approval" in refused.json()["message"]
    # Approval is checked on the tool route before the exec tool sees the call.
    (noticed,) = events(fleet_dir, "careful", "approval.refused")
    assert noticed["data"]["tool"] == "exec"
    waiting = start_flotilla(fleet_dir, "send", "careful", 'call exec {"python": "print(6*7)"}')
    pending: list[dict[str, Any]] = []

    def asked() -> bool:
        out = run_flotilla(fleet_dir, "approvals", "--json").stdout
        pending[:] = [
            item for item in json.loads(out) if item["agent"] == "careful" and item["state"] == "pending"
        ]
        return len(pending) == 1

    wait_for(asked, "the approval item of careful", deadline_s=120)
    assert pending[0]["tool"] == "exec" and pending[0]["arguments"] == {"python": "print(6*7)"}
    assert run_flotilla(fleet_dir, "approve", pending[0]["id"]).returncode == 0
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, err
    assert "exec returned: exit code 0" in out and "42" in out
    (call,) = exec_calls(fleet_dir, "careful")
    assert call["approval"] == "approved" and call["ok"] is True

"""Nothing an agent writes reaches the operator's terminal raw: facts, events, workspace reasons
and the problems of a backup are shown with their control characters replaced, one item per
line; `--json` gives them back exactly.

The agent is hostile: its text holds a window title (OSC 0), a link (OSC 8), a screen clear
(CSI 2J), an 8-bit CSI, a bidirectional override and a newline that would forge a line.
"""

from __future__ import annotations

import io
import json
import os
import re
import tarfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner, Result

from agent_runtime.memory.models import MemoryConfig
from agent_runtime.memory.store import MemoryStore
from agent_runtime.workspace.versioned import Workspace
from orchestrator.api.app import create_app
from orchestrator.backup.manifest import MANIFEST_NAME, AgentPart, Manifest
from orchestrator.cli.main import cli
from orchestrator.config.loader import load_fleet
from orchestrator.fleet.scaffold import prepare_operator_copy
from orchestrator.services import Services
from orchestrator.state.endpoint import Endpoint, write_endpoint
from orchestrator.testing.agent_link import connect_agent
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import attach_subsystems, core_services, fleet_manager

HOSTILE = (
    "title\x1b]0;pwned\x07 link\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\ "
    "clear\x1b[2J csi\x9b31m bidi\u202eecaf\nFORGED-LINE"
)
# What may never reach a terminal: C0 but tab and newline, DEL, C1, bidi overrides.
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

FLEET = """\
version: 1
fleet: screen
agents:
  alpha:
    role: researcher
"""


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(textwrap.dedent(FLEET))
    core = core_services(load_fleet(fleet_file), FakeBackend())
    core.operator_token = core.tokens.mint_operator()
    built = attach_subsystems(core, fleet_manager(core))
    prepare_operator_copy(built.fleet, "alpha", built.paths)
    yield built
    built.db.close()


@pytest.fixture
def live(services: Services) -> Iterator[str]:
    """A real orchestrator on loopback with alpha connected; the CLI finds it by its endpoint."""
    store = MemoryStore(services.paths.agent_storage("alpha") / "memory.db", config=MemoryConfig())
    store.save(HOSTILE, category="travel", source="agent", subject="user.trap")
    store.close()
    Workspace(services.paths.agent_dir("alpha")).write("USER.md", "Likes tea.\n", "agent", HOSTILE)
    with serve_app(create_app(services)) as url, connect_agent(services, url, "alpha"):
        token = services.tokens.mint("alpha")
        posted = httpx.post(
            f"{url}/agent/v1/events",
            json={"type": "agent.reported", "data": {"note": HOSTILE}},
            headers={"authorization": f"Bearer {token}"},
        )
        assert posted.status_code == 204, posted.text
        write_endpoint(services.paths, Endpoint(url=url, token=services.operator_token, pid=os.getpid()))
        yield url


def run(services: Services, *args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), env={"FLOTILLA_FILE": str(services.fleet.path)})
    assert result.exit_code == 0, result.output
    return result


def assert_shown_safely(output: str) -> None:
    assert not RAW.search(output), repr(output)
    assert "pwned" in output  # shown, only defused
    assert not any(line.startswith("FORGED-LINE") for line in output.splitlines()), output


@pytest.mark.parametrize(
    "command",
    [
        ("memory", "list", "alpha"),
        ("memory", "search", "alpha", "title"),
        ("memory", "show", "alpha", "1"),
        ("events", "--agent", "alpha", "-n", "50"),
        ("workspace", "history", "alpha", "USER.md"),
    ],
    ids=lambda command: " ".join(command[:2]),
)
def test_an_agents_text_is_shown_defused(services: Services, live: str, command: tuple[str, ...]) -> None:
    assert_shown_safely(run(services, *command).output)


def test_json_output_gives_the_agents_text_back_exactly(services: Services, live: str) -> None:
    listed = json.loads(run(services, "memory", "list", "alpha", "--json").output)
    # The store keeps a fact on one line; every escape sequence comes back as the agent wrote it.
    assert listed["facts"][0]["text"] == HOSTILE.replace("\n", " ")
    history = json.loads(run(services, "workspace", "history", "alpha", "USER.md", "--json").output)
    assert history["versions"][-1]["reason"] == HOSTILE


def hostile_archive(path: Path) -> None:
    manifest = Manifest(
        fleet="screen",
        flotilla_version="test",
        agents=[AgentPart(name="alpha", complete=False, problem=f"agent alpha named {HOSTILE}")],
    )
    body = manifest.model_dump_json().encode()
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo(MANIFEST_NAME)
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))


def test_verify_shows_an_agents_problem_defused(tmp_path: Path) -> None:
    archive = tmp_path / "hostile.tar"
    hostile_archive(archive)
    result = CliRunner().invoke(cli, ["verify", str(archive)])
    assert result.exit_code == 4, result.output
    assert_shown_safely(result.output)
    exact = CliRunner().invoke(cli, ["verify", str(archive), "--json"])
    assert json.loads(exact.output)["manifest"]["agents"][0]["problem"] == f"agent alpha named {HOSTILE}"


@pytest.mark.parametrize("command", [("logs",), ("workspace", "cat"), ("exec",)], ids=" ".join)
def test_the_commands_that_print_raw_say_so(command: tuple[str, ...]) -> None:
    shown = CliRunner().invoke(cli, [*command, "--help"])
    assert shown.exit_code == 0, shown.output
    assert "raw" in shown.output or "as it is" in shown.output

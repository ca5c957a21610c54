"""`flotilla workspace` shows an agent's screenshots: a row each in `ls`, their versions in
`history`; `cat` refuses a PNG with a message naming where the image is served."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from agent_runtime.workspace.binary import VersionedBinaries
from orchestrator.api.app import create_app
from orchestrator.cli.errors import CliError
from orchestrator.cli.main import cli
from orchestrator.config.loader import load_fleet
from orchestrator.fleet.scaffold import prepare_operator_copy
from orchestrator.services import Services
from orchestrator.state.endpoint import Endpoint, write_endpoint
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import attach_subsystems, core_services, fleet_manager

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40
FLEET = """\
version: 1
fleet: shots-cli
agents:
  alpha:
    role: browses
"""


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(textwrap.dedent(FLEET))
    core = core_services(load_fleet(fleet_file), FakeBackend())
    core.operator_token = core.tokens.mint_operator()
    built = attach_subsystems(core, fleet_manager(core))
    prepare_operator_copy(built.fleet, "alpha", built.paths)
    files = VersionedBinaries(built.paths.agent_dir("alpha"))
    files.write("front", PNG, "browser", "http://127.0.0.1/a", cap=2**20, quota=2**20)
    files.write("front", PNG + b"2", "browser", "http://127.0.0.1/b", cap=2**20, quota=2**20)
    with serve_app(create_app(built)) as url:
        write_endpoint(built.paths, Endpoint(url=url, token=built.operator_token, pid=os.getpid()))
        yield built
    built.db.close()


def run(services: Services, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"FLOTILLA_FILE": str(services.fleet.path)})


def test_ls_and_history_show_the_screenshots(services: Services) -> None:
    listed = run(services, "workspace", "ls", "alpha")
    assert listed.exit_code == 0, listed.output
    row = next(line for line in listed.output.splitlines() if line.startswith("screenshots/front.png"))
    assert "v2" in row and "browser" in row
    rows = json.loads(run(services, "workspace", "ls", "alpha", "--json").output)["files"]
    assert [r["kind"] for r in rows if r["name"] == "screenshots/front.png"] == ["screenshot"]
    history = run(services, "workspace", "history", "alpha", "screenshots/front.png")
    assert history.exit_code == 0, history.output
    lines = [line for line in history.output.splitlines() if line.startswith("v")]
    assert [line.split()[:2] for line in lines] == [["v1", "browser"], ["v2", "browser"]]
    assert "http://127.0.0.1/b" in lines[1]


def test_cat_refuses_a_png_with_a_message(services: Services) -> None:
    shown = run(services, "workspace", "cat", "alpha", "screenshots/front.png")
    assert isinstance(shown.exception, CliError)  # printed as one line by the CLI's entry point
    assert "screenshots/front.png is a PNG image" in str(shown.exception)
    assert "/api/v1/agents/alpha/screenshots/front.png?version=N" in str(shown.exception)

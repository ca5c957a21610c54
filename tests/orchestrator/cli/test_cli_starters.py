"""`flotilla init` and `flotilla completion`: a new user's first two commands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from orchestrator.broker import check_offline
from orchestrator.cli.main import cli
from orchestrator.config.loader import load_fleet


def test_init_writes_a_starter_fleet_that_validates(tmp_path: Path) -> None:
    folder = tmp_path / "Harbour Ops"
    result = CliRunner().invoke(cli, ["init", str(folder)])
    assert result.exit_code == 0, result.output
    fleet = load_fleet(folder / "fleet.yaml")
    assert fleet.name == "harbour-ops"
    (agent,) = fleet.config.agents
    heartbeat = fleet.config.heartbeat_of(agent)
    assert heartbeat is not None and heartbeat.rules
    assert "summarise" in fleet.interfaces[agent]
    assert check_offline(load_fleet(folder / "fleet.yaml", contracts=False)).ok
    text = (folder / "fleet.yaml").read_text()
    assert text.count("#") >= 5  # commented for a first reader


def test_init_never_overwrites_without_force(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text("fleet: mine\nagents: {a: {}}\n")
    result = CliRunner().invoke(cli, ["init", str(tmp_path)])
    assert result.exit_code == 2
    assert "exists; nothing was written" in result.output
    assert (tmp_path / "fleet.yaml").read_text() == "fleet: mine\nagents: {a: {}}\n"
    result = CliRunner().invoke(cli, ["init", str(tmp_path), "--force", "--name", "theirs"])
    assert result.exit_code == 0
    assert load_fleet(tmp_path / "fleet.yaml").name == "theirs"


def test_completion_scripts_and_the_completions_they_ask_for() -> None:
    runner = CliRunner()
    for shell, marker in (("bash", "complete -o"), ("zsh", "compdef"), ("fish", "complete --no-files")):
        result = runner.invoke(cli, ["completion", shell])
        assert result.exit_code == 0
        assert marker in result.output and "_FLOTILLA_COMPLETE" in result.output
    env = os.environ | {"COMP_WORDS": "flotilla co", "COMP_CWORD": "1", "_FLOTILLA_COMPLETE": "bash_complete"}
    completed = subprocess.run(
        [sys.executable, "-c", 'from orchestrator.cli.main import cli; cli(prog_name="flotilla")'],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.stdout.split() == ["plain,contracts", "plain,costs", "plain,completion"]
    assert runner.invoke(cli, ["completion", "tcsh"]).exit_code == 2

"""One command-line convention: -f/--file is the fleet file on every command, -F/--follow
follows, -n/--limit bounds output, --json on every command that prints data."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import click  # noqa: E402
import pytest  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from orchestrator.cli.main import cli  # noqa: E402
from orchestrator.state.endpoint import Endpoint, write_endpoint  # noqa: E402
from tests.orchestrator.memory_access.test_memory_api import agent_store, build, live  # noqa: E402

DATA_COMMANDS = {
    "validate",
    "apply",
    "ps",
    "send",
    "heartbeat",
    "runs",
    "events",
    "workspace ls",
    "workspace history",
    "inbox list",
    "history",
    "trace",
    "contracts check",
    "memory list",
    "memory search",
    "memory show",
    "memory status",
    "memory add",
    "memory edit",
    "memory forget",
    "memory contradictions",
    "costs",
    "alerts",
    "image status",
}


def all_commands() -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(cli)

    def walk(command: click.Command, name: str) -> Iterator[tuple[str, click.Command]]:
        if isinstance(command, click.Group):
            for sub in command.list_commands(ctx):
                found = command.get_command(ctx, sub)
                assert found is not None
                yield from walk(found, f"{name} {sub}".strip())
        else:
            yield name, command

    yield from walk(cli, "")


def options(command: click.Command) -> list[click.Option]:
    return [param for param in command.params if isinstance(param, click.Option)]


def test_every_command_follows_the_convention() -> None:
    problems = []
    seen = set()
    for name, command in all_commands():
        seen.add(name)
        for option in options(command):
            flags = set(option.opts) | set(option.secondary_opts)
            if "-f" in flags and option.name != "fleet_file":
                problems.append(f"{name}: -f is {option.name}, not the fleet file")
            if option.name == "fleet_file" and set(option.opts) != {"-f", "--file"}:
                problems.append(f"{name}: the fleet file is {option.opts}, not -f/--file")
            if "--follow" in flags and "-F" not in flags:
                problems.append(f"{name}: --follow without -F")
            if "--limit" in flags and "-n" not in flags:
                problems.append(f"{name}: --limit without -n")
        if name in DATA_COMMANDS and not any("--json" in o.opts for o in options(command)):
            problems.append(f"{name}: prints data but has no --json")
    assert problems == []
    assert seen >= DATA_COMMANDS


def test_validate_json(tmp_path: Path) -> None:
    good = tmp_path / "fleet.yaml"
    good.write_text("version: 1\nfleet: conv\nagents:\n  alpha: {role: researcher}\n")
    result = CliRunner().invoke(cli, ["validate", "-f", str(good), "--runtime", "process", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) | {"notes": []} == {
        "file": str(good),
        "valid": True,
        "fleet": "conv",
        "agents": ["alpha"],
        "warnings": [],
        "problems": [],
        "notes": [],
    }
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "version: 1\nfleet: conv\nagents:\n  alpha:\n    role: researcher\n    talks_to: [ghost]\n"
    )
    result = CliRunner().invoke(cli, ["validate", "-f", str(bad), "--runtime", "process", "--json"])
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    assert report["valid"] is False
    (problem,) = report["problems"]
    assert problem["line"] == 6 and "ghost" in problem["message"]


def test_apply_dry_run_json(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("version: 1\nfleet: conv\nagents:\n  alpha: {role: researcher}\n")
    result = CliRunner().invoke(
        cli, ["apply", "-f", str(fleet), "--dry-run", "--runtime", "process", "--json"]
    )
    assert result.exit_code == 5, result.output  # changes pending
    plan = json.loads(result.output)
    assert plan["dry_run"] is True and plan["changed"] is True
    assert any("alpha" in action for action in plan["actions"])


@pytest.mark.parametrize(
    "command", [["status"], ["show", "1"], ["list", "-n", "1"], ["search", "-n", "1", "tides"]]
)
def test_memory_commands_print_json(tmp_path: Path, command: list[str]) -> None:
    services = build(tmp_path)
    store = agent_store(services)
    store.save("The harbour closes at dusk because of the tides", category="place", source="agent")
    store.close()
    try:
        with live(services, "alpha") as url:
            write_endpoint(services.paths, Endpoint(url=url, token=services.operator_token, pid=os.getpid()))
            verb, *rest = command
            result = CliRunner().invoke(
                cli, ["memory", verb, "-f", str(services.fleet.path), "alpha", *rest, "--json"]
            )
            assert result.exit_code == 0, result.output
            found = json.loads(result.output)
            assert isinstance(found, dict) and found
    finally:
        services.db.close()

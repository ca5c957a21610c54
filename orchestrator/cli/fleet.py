"""Fleet lifecycle commands: validate, schema, up, apply, ps, logs, down."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import click

from orchestrator.backends.base import Backend, BackendError, BackendUnavailable
from orchestrator.backends.select import RUNTIMES, Runtime, open_backend, remembered_runtime
from orchestrator.cli.client import CliError, read_endpoint
from orchestrator.cli.common import (
    DEFAULT_PORT,
    client_for,
    fleet_file_long_option,
    fleet_file_option,
    load_or_exit,
)
from orchestrator.cli.render import fleet_table
from orchestrator.config.loader import LoadedFleet
from orchestrator.config.models import FleetConfig
from orchestrator.image_name import DEFAULT_IMAGE
from orchestrator.reconcile import fleet_labels, plan, remove_fleet
from orchestrator.state.paths import StatePaths


@click.command()
@fleet_file_option
def validate(fleet_file: Path) -> None:
    """Check fleet.yaml; report every problem with file, line and field (exit code 2)."""
    fleet = load_or_exit(fleet_file)
    count = len(fleet.config.agents)
    click.echo(f"{fleet_file}: fleet {fleet.name!r} is valid ({count} agent{'s' if count != 1 else ''})")


@click.command()
def schema() -> None:
    """Print the JSON Schema of fleet.yaml, for editors."""
    click.echo(json.dumps(FleetConfig.model_json_schema(), indent=2))


def _backend_or_exit(runtime: Runtime, paths: StatePaths) -> Backend:
    try:
        return open_backend(runtime, paths)
    except BackendUnavailable as exc:
        raise CliError(str(exc)) from None


def _runtime_of(paths: StatePaths, runtime: Runtime | None, fleet: LoadedFleet | None = None) -> Runtime:
    """The --runtime flag, else fleet.yaml's `runtime:`, else the one the fleet last ran on, else docker."""
    declared = fleet.config.runtime if fleet is not None else None
    return runtime or declared or remembered_runtime(paths) or "docker"


@click.command()
@fleet_file_option
@click.option(
    "-d",
    "--detach",
    is_flag=True,
    help="Run the orchestrator in the background (pid and log under .flotilla/).",
)
@click.option(
    "--runtime",
    type=click.Choice(RUNTIMES),
    default=None,
    help="Where agents run: docker (the default), swarm (Docker Swarm services) or local processes "
    "(default: fleet.yaml's runtime, else the last one used).",
)
@click.option(
    "--port", type=int, default=DEFAULT_PORT, show_default=True, help="The orchestrator's API port."
)
@click.option("--image", default=DEFAULT_IMAGE, show_default=True, help="The agent image (docker).")
@click.option("--log-json", is_flag=True, help="Write the orchestrator's log as JSON lines.")
def up(
    fleet_file: Path, detach: bool, runtime: Runtime | None, port: int, image: str, log_json: bool
) -> None:
    """Start the orchestrator and reconcile the fleet: create, recreate or remove only what changed."""
    from orchestrator.cli.detach import LaunchOptions, launch_detached

    fleet = load_or_exit(fleet_file)
    paths = StatePaths.for_fleet_file(fleet.path)
    if read_endpoint(paths) is not None:
        click.echo("the orchestrator is already running; applying fleet.yaml to it")
        _apply_remote(fleet_file, dry_run=False)
        return
    chosen = _runtime_of(paths, runtime, fleet)
    backend = _backend_or_exit(chosen, paths)
    options = LaunchOptions(chosen, port, image, log_json)
    if detach:
        launch_detached(fleet, options, paths)
    else:
        from orchestrator.cli.launch import run_foreground

        run_foreground(fleet, backend, options)


def _apply_remote(fleet_file: Path, dry_run: bool) -> None:
    client = client_for(fleet_file, timeout_s=300.0)
    result = client.post("/api/v1/apply", dry_run=dry_run or None)
    for line in result["actions"]:
        click.echo(line)
    if not result["changed"]:
        click.echo("nothing to change")


@click.command()
@fleet_file_option
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("--runtime", type=click.Choice(RUNTIMES), default=None)
def apply(fleet_file: Path, dry_run: bool, runtime: Runtime | None) -> None:
    """Reconcile the running fleet with fleet.yaml (--dry-run only prints the plan)."""
    fleet = load_or_exit(fleet_file)
    paths = StatePaths.for_fleet_file(fleet.path)
    if read_endpoint(paths) is not None:
        _apply_remote(fleet_file, dry_run)
        return
    if not dry_run:
        raise CliError("no orchestrator is running: `flotilla up` starts it and applies fleet.yaml")
    backend = _backend_or_exit(_runtime_of(paths, runtime, fleet), paths)
    for action in plan(fleet, backend.list(fleet_labels(fleet.name))):
        click.echo(str(action))


@click.command()
@fleet_file_option
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def ps(fleet_file: Path, as_json: bool) -> None:
    """Show each agent's state, health, restarts, uptime and memory."""
    status = client_for(fleet_file).get("/api/v1/fleet")
    if as_json:
        click.echo(json.dumps(status, indent=2))
        return
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    console.print(fleet_table(status))
    for problem in status["problems"]:
        console.print(f"[red]problem: {problem}[/red]", highlight=False)
    if status["runtime"] != "docker":
        console.print(f"[yellow]isolation {status['isolation']}[/yellow]")


@click.command()
@fleet_file_long_option
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines.")
@click.option("--tail", type=int, default=200, show_default=True)
@click.option("--runtime", type=click.Choice(RUNTIMES), default=None)
@click.argument("agent")
def logs(fleet_file: Path, follow: bool, tail: int, runtime: Runtime | None, agent: str) -> None:
    """Print an agent's log."""
    fleet = load_or_exit(fleet_file)
    paths = StatePaths.for_fleet_file(fleet.path)
    backend = _backend_or_exit(_runtime_of(paths, runtime), paths)
    units = [u for u in backend.list(fleet_labels(fleet.name)) if u.agent == agent]
    if not units:
        raise CliError(f"agent {agent!r} has no unit in fleet {fleet.name!r}")
    try:
        for line in backend.logs(units[0].id, follow=follow, tail=tail):
            click.echo(line.rstrip("\n"))
    except KeyboardInterrupt:
        return


@click.command()
@fleet_file_option
@click.option(
    "-v", "--volumes", is_flag=True, help="Also delete the agents' state folders (.flotilla/agents/)."
)
@click.option("--runtime", type=click.Choice(RUNTIMES), default=None)
def down(fleet_file: Path, volumes: bool, runtime: Runtime | None) -> None:
    """Stop the orchestrator and remove every unit (and network) of this fleet; state stays unless -v."""
    fleet = load_or_exit(fleet_file)
    paths = StatePaths.for_fleet_file(fleet.path)
    _stop_orchestrator(paths)
    backend = _backend_or_exit(_runtime_of(paths, runtime), paths)
    try:
        remove_fleet(backend, fleet.name, lambda unit: click.echo(f"removed {unit.name}"))
    except BackendError as exc:
        raise CliError(str(exc)) from None
    if volumes:
        shutil.rmtree(paths.agents, ignore_errors=True)
        click.echo(f"deleted {paths.agents}")
    click.echo(f"fleet {fleet.name!r} is down")


def _stop_orchestrator(paths: StatePaths) -> None:
    endpoint = read_endpoint(paths)
    if endpoint is None:
        return
    os.kill(endpoint.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while read_endpoint(paths) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    click.echo(f"stopped the orchestrator (pid {endpoint.pid})")

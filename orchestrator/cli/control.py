"""Acting on agents: `stop`, `start`, `restart`, `pause`, `resume`, `exec`; the operator's
token (`token rotate`) and the dashboard's address (`dashboard`)."""

from __future__ import annotations

import sys
from contextlib import closing
from pathlib import Path

import click

from orchestrator.backends.base import BackendError
from orchestrator.cli.common import client_for, load_or_exit
from orchestrator.cli.errors import NotRunning
from orchestrator.cli.options import echo_json, fleet_file_option, json_option
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths


def _post(fleet_file: Path, path: str) -> None:
    with closing(client_for(fleet_file, timeout_s=120.0)) as client:
        result = client.post(path)
    click.echo(result["done"])


def _agent_command(action: str, summary: str) -> click.Command:
    @click.command(action, help=summary)
    @fleet_file_option
    @click.argument("agent")
    def command(fleet_file: Path, agent: str) -> None:
        _post(fleet_file, f"/api/v1/agents/{agent}/{action}")

    return command


stop = _agent_command("stop", "Stop AGENT and keep it stopped (the supervisor leaves it) until `start`.")
start = _agent_command("start", "Start AGENT again after `stop` (or when its unit is gone).")
restart = _agent_command("restart", "Restart AGENT's unit now; its storage and inbox stay.")


def _hold_command(action: str, summary: str) -> click.Command:
    @click.command(action, help=summary)
    @fleet_file_option
    @click.option("--all", "whole_fleet", is_flag=True, help="Every agent of the fleet.")
    @click.argument("agent", required=False)
    def command(fleet_file: Path, whole_fleet: bool, agent: str | None) -> None:
        if whole_fleet == (agent is not None):
            raise click.UsageError("name one AGENT, or give --all")
        _post(fleet_file, f"/api/v1/fleet/{action}" if whole_fleet else f"/api/v1/agents/{agent}/{action}")

    return command


pause = _hold_command(
    "pause",
    "Pause AGENT (or --all: the kill switch): no model calls, no heartbeat ticks; its inbox keeps "
    "what arrives. The unit keeps running.",
)
resume = _hold_command("resume", "Resume AGENT (or --all) after `pause`.")


@click.command("exec", context_settings={"ignore_unknown_options": True})
@fleet_file_option
@click.argument("agent")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def exec_command(fleet_file: Path, agent: str, command: tuple[str, ...]) -> None:
    """Run COMMAND inside AGENT's unit as the agent's user, for debugging:

    \b
        flotilla exec researcher -- ls -la /data

    What the command prints reaches the terminal raw, as with `docker exec`: it runs in the
    agent's container, so pipe it through `cat -v` when the agent may be hostile.
    """
    from orchestrator.cli.fleet import _backend_or_exit, _runtime_of, _units_of

    fleet = load_or_exit(fleet_file, secrets=False)
    paths = StatePaths.for_fleet_file(fleet.path)
    backend = _backend_or_exit(_runtime_of(paths, None, fleet), paths)
    units = _units_of(backend, fleet, agent)
    try:
        code, output = backend.exec(units[0].id, list(command))
    except BackendError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(output, nl=False)
    sys.exit(code)


@click.group("token")
def token() -> None:
    """The operator's token (kept across restarts in .flotilla/operator.token)."""


@token.command("rotate")
@fleet_file_option
def rotate(fleet_file: Path) -> None:
    """Replace the operator's token; the old one stops working at once."""
    with closing(client_for(fleet_file)) as client:
        result = client.post("/api/v1/token/rotate")
    click.echo("the operator token was replaced; the dashboard and scrape configs need the new one:")
    click.echo(result["token"])


@click.command()
@fleet_file_option
@json_option
def dashboard(fleet_file: Path, as_json: bool) -> None:
    """Print the dashboard's address (with the operator token) of the running orchestrator."""
    endpoint = read_endpoint(StatePaths.for_fleet_file(fleet_file))
    if endpoint is None:
        raise NotRunning(f"no orchestrator is running for {fleet_file}: start it with `flotilla up -d`")
    address = f"{endpoint.url}/?token={endpoint.token}"
    if as_json:
        echo_json({"url": address, "api": endpoint.url, "pid": endpoint.pid})
        return
    click.echo(address)

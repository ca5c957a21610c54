"""`flotilla ps`: the fleet's status, read from the running orchestrator.

A module of its own, importing only what the command uses (the API client, the table): `ps` is
run often, by hand and from scripts, and loading the rest of the fleet commands (the runtimes,
fleet.yaml's models) cost it more than the orchestrator's answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from orchestrator.cli.client import ApiClient
from orchestrator.cli.options import fleet_file_option
from orchestrator.cli.render import FOLD_ASLEEP_ABOVE, awake_summary, cooling_lines, fleet_table, fold_asleep
from orchestrator.cli.terminal import markup_safe


@click.command()
@fleet_file_option
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help=f"List every agent; by default a fleet of more than {FOLD_ASLEEP_ABOVE} folds its sleeping "
    "agents that have nothing to do into one line.",
)
@click.option("-q", "--quiet", is_flag=True, help="Only the agents' names, one per line.")
def ps(fleet_file: Path, as_json: bool, show_all: bool, quiet: bool) -> None:
    """Show each agent's state, health, restarts, uptime and memory."""
    status = ApiClient.from_fleet_file(fleet_file).get("/api/v1/fleet")
    if quiet:
        for agent in status["agents"]:
            click.echo(agent["name"])
        return
    if as_json:
        click.echo(json.dumps(status, indent=2))
        return
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    shown, folded = fold_asleep(status, show_all)
    console.print(fleet_table(shown))
    if folded:
        console.print(
            f"{folded} more agents asleep with nothing to do (`ps --all` lists them)", highlight=False
        )
    console.print(awake_summary(status), highlight=False)
    for line in cooling_lines(status):
        console.print(f"[yellow]{line}[/yellow]", highlight=False)
    for problem in status["problems"]:
        console.print(f"[red]problem: {markup_safe(problem)}[/red]", highlight=False)
    for warning in status.get("warnings", []):
        console.print(f"[bold red]warning: {markup_safe(warning)}[/bold red]", highlight=False)
    if status["runtime"] != "docker":
        console.print(f"[yellow]isolation {status['isolation']}[/yellow]")

"""`flotilla move AGENT --node NODE`: run an agent on another node, its storage carried along."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import click

from orchestrator.cli.common import client_for
from orchestrator.cli.options import fleet_file_option

MOVE_TIMEOUT_S = 600.0


@click.command()
@fleet_file_option
@click.argument("agent")
@click.option(
    "--node", required=True, help="The hostname of the node to run AGENT on (see `docker node ls`)."
)
@click.option(
    "--within",
    "within_s",
    type=click.FloatRange(0, 3600),
    default=180.0,
    show_default=True,
    help="Seconds AGENT has on NODE to connect, take its state and answer; past them it goes back.",
)
def move(fleet_file: Path, agent: str, node: str, within_s: float) -> None:
    """Move AGENT to NODE with its state (swarm runtime): its own files (memory, history,
    learnings) fetched over its link, its unit made again on NODE with fresh storage, the
    files handed back to it there; then its old storage is removed. If a step fails, AGENT runs
    again where it ran, on its old storage.

    The new placement is kept in .flotilla/placements.json and wins over fleet.yaml's
    `placement` for AGENT; messages sent meanwhile wait in its inbox.
    """
    with closing(client_for(fleet_file, timeout_s=MOVE_TIMEOUT_S + within_s)) as client:
        result = client.post(f"/api/v1/agents/{agent}/move", {"node": node, "within_s": within_s})
    click.echo(result["done"])

"""`flotilla move AGENT --node NODE`: run an agent on another node, its storage carried along."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import click

from orchestrator.cli.common import client_for, fleet_file_option

MOVE_TIMEOUT_S = 600.0


@click.command()
@fleet_file_option
@click.argument("agent")
@click.option(
    "--node", required=True, help="The hostname of the node to run AGENT on (see `docker node ls`)."
)
def move(fleet_file: Path, agent: str, node: str) -> None:
    """Move AGENT to NODE: stop it, carry its storage there, start it there (swarm runtime).

    The new placement is kept in .flotilla/placements.json and wins over fleet.yaml's
    `placement` for AGENT; messages sent meanwhile wait in its inbox.
    """
    with closing(client_for(fleet_file, timeout_s=MOVE_TIMEOUT_S)) as client:
        result = client.post(f"/api/v1/agents/{agent}/move", {"node": node})
    click.echo(result["done"])

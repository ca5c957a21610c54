"""`flotilla alerts`: the alerts raised by fleet.yaml's rules and how their delivery went."""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path

import click
from pydantic import TypeAdapter

from orchestrator.alerts import AlertRecord
from orchestrator.cli.common import client_for
from orchestrator.cli.options import fleet_file_option
from orchestrator.cli.terminal import echo

_RECORDS = TypeAdapter(list[AlertRecord])


@click.command()
@fleet_file_option
@click.option("-n", "--limit", default=20, show_default=True, type=click.IntRange(1, 1000), help="How many.")
@click.option("--json", "as_json", is_flag=True, help="Print the alerts as JSON.")
def alerts(fleet_file: Path, limit: int, as_json: bool) -> None:
    """The newest alerts: rule, agent, webhook, delivery status and attempts."""
    with closing(client_for(fleet_file)) as client:
        records = _RECORDS.validate_python(client.get("/api/v1/alerts", limit=limit))
    if as_json:
        click.echo(json.dumps([r.model_dump(mode="json") for r in records], indent=2))
        return
    if not records:
        echo("no alerts (rules are declared under alerts: in fleet.yaml)")
        return
    for record in records:
        repeats = f" (+{record.repeats} repeats)" if record.repeats else ""
        error = f" — {record.last_error}" if record.status != "sent" and record.last_error else ""
        echo(
            f"{record.created_at:%Y-%m-%d %H:%M:%S}  {record.status:<7} {record.webhook:<12} "
            f"{record.title:<16} {record.agent or '-':<12} x{record.attempts}{repeats}  {record.summary}{error}"
        )

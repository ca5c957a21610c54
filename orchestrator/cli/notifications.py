"""`flotilla notifications`: what agents sent to their channels and how delivery went."""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path

import click
from pydantic import TypeAdapter

from orchestrator.cli.common import client_for
from orchestrator.cli.options import fleet_file_option
from orchestrator.notifications.store import NotificationRecord

_RECORDS = TypeAdapter(list[NotificationRecord])


@click.command()
@fleet_file_option
@click.option("-n", "--limit", default=20, show_default=True, type=click.IntRange(1, 1000), help="How many.")
@click.option("--json", "as_json", is_flag=True, help="Print the notifications as JSON.")
@click.argument("agent", required=False)
def notifications(fleet_file: Path, limit: int, as_json: bool, agent: str | None) -> None:
    """The newest notifications: agent, channel, origin, status, attempts and the last error."""
    with closing(client_for(fleet_file)) as client:
        records = _RECORDS.validate_python(client.get("/api/v1/notifications", limit=limit, agent=agent))
    if as_json:
        click.echo(json.dumps([r.model_dump(mode="json") for r in records], indent=2))
        return
    if not records:
        click.echo("no notifications (channels are declared under channels: in fleet.yaml)")
        return
    for record in records:
        error = f" — {record.last_error}" if record.status != "sent" and record.last_error else ""
        summary = " ".join(record.text.split())[:60]
        click.echo(
            f"{record.created_at:%Y-%m-%d %H:%M:%S}  {record.status:<8} {record.agent:<12} "
            f"{record.channel:<12} {record.origin:<4} x{record.attempts}  {summary}{error}"
        )

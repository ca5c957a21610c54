"""`flotilla channels`: pairing people with the fleet's chat channels, and who is paired."""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path
from urllib.parse import quote

import click
from pydantic import TypeAdapter

from orchestrator.cli.common import client_for
from orchestrator.cli.options import fleet_file_option
from orchestrator.conversations.people import PairingCode, Person

_PEOPLE = TypeAdapter(list[Person])


@click.group()
def channels() -> None:
    """Chat channels (fleet.yaml channels of type telegram_chat or slack_chat): pairing and people."""


@channels.command()
@fleet_file_option
@click.option("--agent", help="The person's first agent (default: the channel's first agent).")
@click.argument("channel")
def pair(fleet_file: Path, agent: str | None, channel: str) -> None:
    """Print a one-time code: the person who sends it to CHANNEL's bot is paired with the fleet."""
    with closing(client_for(fleet_file)) as client:
        issued = PairingCode.model_validate(
            client.post(f"/api/v1/channels/{quote(channel)}/pairings", {"agent": agent})
        )
    click.echo(issued.code)
    click.echo(
        f"valid until {issued.expires_at:%Y-%m-%d %H:%M:%S} UTC, once: the person sends it to the bot "
        f"of channel {channel} (as it is, or as /pair {issued.code})",
        err=True,
    )


@channels.command()
@fleet_file_option
@click.option("--json", "as_json", is_flag=True, help="Print the people as JSON.")
@click.argument("channel", required=False)
def people(fleet_file: Path, as_json: bool, channel: str | None) -> None:
    """The people paired with the chat channels, with their current agent."""
    with closing(client_for(fleet_file)) as client:
        found = _PEOPLE.validate_python(client.get("/api/v1/channels/people", channel=channel))
    if as_json:
        click.echo(json.dumps([p.model_dump(mode="json") for p in found], indent=2))
        return
    if not found:
        click.echo("nobody is paired (flotilla channels pair CHANNEL prints a code)")
    for person in found:
        click.echo(f"{person.principal:<40} {person.name[:24]:<24} {person.agent or '-'}")


@channels.command()
@fleet_file_option
@click.argument("channel")
@click.argument("user_id")
def unpair(fleet_file: Path, channel: str, user_id: str) -> None:
    """Take USER_ID off CHANNEL's allow-list."""
    with closing(client_for(fleet_file)) as client:
        client.delete(f"/api/v1/channels/{quote(channel)}/people/{quote(user_id)}")
    click.echo(f"unpaired {user_id} from {channel}")

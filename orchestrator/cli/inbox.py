"""`flotilla inbox AGENT` (what waits, and what was dead-lettered) and `flotilla inbox retry|drop AGENT ID`."""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click

from orchestrator.cli.broker import inbox as list_inbox
from orchestrator.cli.client import ApiClient
from orchestrator.cli.common import client_for
from orchestrator.cli.errors import CliError
from orchestrator.cli.options import fleet_file_option
from orchestrator.cli.terminal import echo, one_line


class _ListByDefault(click.Group):
    """`flotilla inbox AGENT` lists; `flotilla inbox retry|drop AGENT ID` acts on a dead letter."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["list", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_ListByDefault)
def inbox() -> None:
    """List AGENT's inbox, or retry / drop one of its dead letters.

    \b
    flotilla inbox AGENT              what waits (and what was dead-lettered)
    flotilla inbox retry AGENT ID     queue a dead letter again
    flotilla inbox drop AGENT ID      give a dead letter up
    """


def _dead_letters_path(agent: str) -> str:
    return f"/api/v1/agents/{quote(agent, safe='')}/dead-letters"


@inbox.command("list")
@click.pass_context
@fleet_file_option
@click.option("-a", "--all", "show_all", is_flag=True, help="Include finished items.")
@click.option("-n", "--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON array: the items, then the dead letters (state dead)."
)
@click.argument("agent")
def list_command(
    ctx: click.Context, fleet_file: Path, show_all: bool, limit: int, as_json: bool, agent: str
) -> None:
    """List AGENT's inbox, then its dead letters."""
    if as_json:
        with closing(client_for(fleet_file)) as client:
            path = f"/api/v1/agents/{quote(agent, safe='')}/inbox"
            items = client.get(path, all=show_all, limit=limit)
            dead = client.get(_dead_letters_path(agent))
        click.echo(json.dumps([*items, *(letter | {"state": "dead"} for letter in dead)], indent=2))
        return
    ctx.invoke(list_inbox, fleet_file=fleet_file, show_all=show_all, limit=limit, as_json=False, agent=agent)
    with closing(client_for(fleet_file)) as client:
        dead = client.get(_dead_letters_path(agent))
    if dead:
        echo(f"\n{len(dead)} dead-lettered (`flotilla inbox retry|drop {agent} ID`):")
        for letter in dead:
            what = one_line(letter["operation"] or letter["preview"].replace("\n", " ")[:60])
            echo(
                f"  {letter['id']}  {letter['kind']} from {letter['sender']}, {letter['attempts']} tries: {what}"
            )


def _resolve(client: ApiClient, agent: str, item_id: str) -> str:
    """The full id of the dead letter that `item_id` names (the list shows prefixes)."""
    ids: list[str] = [letter["id"] for letter in client.get(_dead_letters_path(agent))]
    matches = [full for full in ids if full.startswith(item_id)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise CliError(f"{agent} has no dead-lettered item {item_id!r}; `flotilla inbox {agent}` lists them")
    raise CliError(f"{item_id!r} names {len(matches)} dead letters of {agent}; give more of the id")


def _act(fleet_file: Path, agent: str, item_id: str, action: str) -> dict[str, Any]:
    with closing(client_for(fleet_file)) as client:
        full = _resolve(client, agent, item_id)
        done: dict[str, Any] = client.post(f"{_dead_letters_path(agent)}/{quote(full, safe='')}/{action}")
    return done


@inbox.command()
@fleet_file_option
@click.argument("agent")
@click.argument("item_id")
def retry(fleet_file: Path, agent: str, item_id: str) -> None:
    """Queue AGENT's dead letter ITEM_ID again, with a fresh count of delivery attempts."""
    done = _act(fleet_file, agent, item_id, "retry")
    echo(f"{done['item_id']} queued again for {agent}")


@inbox.command()
@fleet_file_option
@click.argument("agent")
@click.argument("item_id")
def drop(fleet_file: Path, agent: str, item_id: str) -> None:
    """Give AGENT's dead letter ITEM_ID up: it is never delivered again."""
    done = _act(fleet_file, agent, item_id, "drop")
    echo(f"{done['item_id']} dropped")

"""Talking to an agent: `send` one message, or `chat` interactively."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from orchestrator.cli.client import ApiClient, CliError
from orchestrator.cli.common import client_for, fleet_file_option


def _exchange(client: ApiClient, agent: str, text: str, timeout_s: float) -> bool:
    """Send one message and print the reply as it streams. Returns whether the agent succeeded."""
    body = {"text": text, "timeout_s": timeout_s}
    printed = False
    for event, data in client.stream(
        "POST", f"/api/v1/agents/{agent}/messages", body, timeout_s=None, stream="true"
    ):
        payload = json.loads(data)
        if event == "delta":
            click.echo(payload["delta"], nl=False)
            sys.stdout.flush()
            printed = True
        elif event == "done":
            if not printed and payload.get("text"):
                click.echo(payload["text"], nl=False)
            click.echo()
            if not payload.get("ok", True):
                click.echo(f"error: {payload.get('error') or 'the agent failed'}", err=True)
                return False
            return True
        elif event == "error":
            click.echo()
            raise CliError(payload.get("message", "the agent did not answer"))
    raise CliError("the orchestrator closed the stream before the reply was complete")


@click.command()
@fleet_file_option
@click.option(
    "--timeout",
    "timeout_s",
    type=float,
    default=300.0,
    show_default=True,
    help="Seconds to wait for the reply.",
)
@click.argument("agent")
@click.argument("message")
def send(fleet_file: Path, timeout_s: float, agent: str, message: str) -> None:
    """Send MESSAGE to AGENT and print the reply as it streams."""
    if not _exchange(client_for(fleet_file), agent, message, timeout_s):
        raise SystemExit(1)


@click.command()
@fleet_file_option
@click.option("--timeout", "timeout_s", type=float, default=300.0, show_default=True)
@click.argument("agent")
def chat(fleet_file: Path, timeout_s: float, agent: str) -> None:
    """Talk with AGENT interactively (an empty line or Ctrl-D ends)."""
    client = client_for(fleet_file)
    click.echo(f"chatting with {agent}; an empty line or Ctrl-D ends")
    while True:
        try:
            text = input("you> ").strip()
        except EOFError:
            click.echo()
            return
        if not text:
            return
        click.echo(f"{agent}> ", nl=False)
        try:
            _exchange(client, agent, text, timeout_s)
        except CliError as exc:
            click.echo(f"error: {exc}", err=True)

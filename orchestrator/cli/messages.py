"""Talking to an agent: `send` one message, or `chat` interactively."""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from orchestrator.cli.client import ApiClient
from orchestrator.cli.common import client_for
from orchestrator.cli.errors import BadInput, CliError
from orchestrator.cli.options import fleet_file_option
from orchestrator.cli.terminal import echo
from orchestrator.config.wrong_names import unknown_agent

HISTORY_FILE = Path("~/.flotilla_chat_history")
HISTORY_LENGTH = 1000


@dataclass
class Reply:
    item_id: str | None
    ok: bool
    text: str
    error: str | None
    result: dict[str, Any]


def _exchange(client: ApiClient, agent: str, text: str, timeout_s: float, show: bool = True) -> Reply:
    """Send one message; print the reply as it streams when `show` is set."""
    body = {"text": text, "timeout_s": timeout_s}
    printed, item_id = False, None
    for event, data in client.stream(
        "POST", f"/api/v1/agents/{agent}/messages", body, timeout_s=None, stream="true"
    ):
        payload = json.loads(data)
        if event == "queued":
            item_id = payload.get("item_id")
        elif event == "waiting":
            # Said on stderr at once, whatever the output: why the reply is not coming yet.
            echo(payload.get("message", "waiting for the agent"), err=True)
        elif event == "delta" and show:
            echo(payload["delta"], nl=False)
            sys.stdout.flush()
            printed = True
        elif event == "done":
            reply = Reply(
                item_id,
                bool(payload.get("ok", True)),
                payload.get("text") or "",
                payload.get("error"),
                payload,
            )
            if show:
                if not printed and reply.text:
                    echo(reply.text, nl=False)
                echo()
                if not reply.ok:
                    echo(f"error: {reply.error or 'the agent failed'}", err=True)
            return reply
        elif event == "error":
            if show:
                echo()
            raise CliError(payload.get("message", "the agent did not answer"))
    raise CliError("the orchestrator closed the stream before the reply was complete")


def _require_agent(client: ApiClient, agent: str) -> None:
    """Refuse an unknown agent before anything is typed or sent."""
    fleet = client.get("/api/v1/fleet")
    names = [entry["name"] for entry in fleet["agents"]]
    if agent not in names:
        raise BadInput(unknown_agent(agent, fleet["fleet"], names))


_timeout_option = click.option(
    "--timeout",
    "timeout_s",
    type=float,
    default=300.0,
    show_default=True,
    help="Seconds to wait for the reply.",
)


@click.command()
@fleet_file_option
@_timeout_option
@click.option("--json", "as_json", is_flag=True, help="Print the finished reply as one JSON object.")
@click.argument("agent")
@click.argument("message")
def send(fleet_file: Path, timeout_s: float, as_json: bool, agent: str, message: str) -> None:
    """Send MESSAGE to AGENT and print the reply as it streams."""
    reply = _exchange(client_for(fleet_file), agent, message, timeout_s, show=not as_json)
    if as_json:
        document = {"agent": agent, "item_id": reply.item_id, "ok": reply.ok, "text": reply.text}
        click.echo(json.dumps(document | {"error": reply.error, "result": reply.result}, indent=2))
    if not reply.ok:
        raise SystemExit(1)


def _enable_line_editing() -> None:
    """Arrow keys, Ctrl-R and a history kept between sessions, where readline exists."""
    try:
        import readline
    except ImportError:  # no readline on this platform: plain input still works
        return
    history = HISTORY_FILE.expanduser()
    with contextlib.suppress(OSError):
        readline.read_history_file(history)
    readline.set_history_length(HISTORY_LENGTH)
    import atexit

    atexit.register(_save_history, readline, history)


def _save_history(readline: Any, history: Path) -> None:
    with contextlib.suppress(OSError):
        readline.write_history_file(history)


@click.command()
@fleet_file_option
@_timeout_option
@click.argument("agent")
def chat(fleet_file: Path, timeout_s: float, agent: str) -> None:
    """Talk with AGENT interactively (an empty line or Ctrl-D ends); arrow keys and history work."""
    client = client_for(fleet_file)
    _require_agent(client, agent)
    if sys.stdin.isatty():
        _enable_line_editing()
    echo(f"chatting with {agent}; an empty line or Ctrl-D ends")
    while True:
        try:
            text = input("you> ").strip()
        except EOFError:
            echo()
            return
        if not text:
            return
        echo(f"{agent}> ", nl=False)
        try:
            _exchange(client, agent, text, timeout_s)
        except CliError as exc:
            echo(f"error: {exc}", err=True)

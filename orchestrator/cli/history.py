"""`flotilla history AGENT [-n N] [--follow] [--json]`: what an agent did, turn by turn.

Each turn shows its messages (the request, the model's replies, each tool call with its
arguments and its result), the run's model, tokens, cost, duration and outcome, and the
context's flushes and compactions where they happened.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from agent_runtime.protocol import MAX_TURNS, TranscriptMessage
from orchestrator.cli.client import ApiClient
from orchestrator.cli.common import client_for
from orchestrator.cli.options import fleet_file_option, follow_option
from orchestrator.cli.terminal import printable
from orchestrator.running_agents.transcripts import ContextMark, Transcript, TranscriptTurn, TurnRun

FOLLOW_EVERY_S = 1.0
SHOWN_TEXT = 2_000
ROLE_STYLE = {"user": "cyan", "assistant": "green", "tool": "yellow", "system": "magenta"}


def _short(text: str, limit: int = SHOWN_TEXT) -> str:
    shown = text if len(text) <= limit else text[:limit] + f" … [{len(text) - limit} more chars]"
    return printable(shown)


def _clock(at: str) -> str:
    return printable(at[11:19] if len(at) >= 19 else at[:19])


def run_summary(run: TurnRun | None) -> str:
    if run is None:
        return "running"
    tokens = f"{run.tokens_in}→{run.tokens_out} tokens"
    parts = [
        run.trigger,
        run.model or "-",
        tokens,
        f"${run.cost_usd:.4f}",
        f"{run.duration_s:.2f} s",
        run.outcome,
    ]
    return printable(" · ".join(parts) + (f" ({run.detail})" if run.detail else ""))


def turn_header(turn: TranscriptTurn) -> str:
    item = (turn.item_id or "-")[:12]
    return click.style(
        f"── {turn.started_at[:19].replace('T', ' ')}  item {item}  ", bold=True
    ) + run_summary(turn.run)


SOURCE_LABELS = {
    "host": "host tool",
    "orchestrator_mcp": "MCP via orchestrator",
    "mcp": "MCP",
    "peer": "peer",
}


def _where(name: str, sources: dict[str, str]) -> str:
    """` [host tool]` after a call of a tool that did not run inside the agent, else nothing."""
    source = sources.get(name)
    return f" [{printable(SOURCE_LABELS.get(source, source))}]" if source else ""


def message_lines(message: TranscriptMessage, sources: dict[str, str] | None = None) -> list[str]:
    """The message's lines; `sources` (the run's tool_sources) marks where each call ran."""
    sources = sources or {}
    role = click.style(f"{message.role:<9}", fg=ROLE_STYLE.get(message.role))
    cut = " [cut by the agent]" if message.truncated else ""
    lines = []
    if message.role == "tool":
        lines.append(
            f"  {_clock(message.at)} {role} ← {printable(message.name or 'tool')}: {_short(message.content)}{cut}"
        )
    elif message.content or not message.tool_calls:
        lines.append(f"  {_clock(message.at)} {role} {_short(message.content)}{cut}")
    for call in message.tool_calls:
        args = _short(call.arguments) + (" [cut by the agent]" if call.truncated else "")
        where = _where(call.name, sources)
        lines.append(f"  {_clock(message.at)} {role} → {printable(call.name)}({args}){where}")
    return lines


def mark_line(mark: ContextMark) -> str:
    stamp = mark.at.strftime("%H:%M:%S")
    if mark.type in REQUEST_MARKS:
        return click.style(f"  {stamp} ⇄ {printable(request_summary(mark))}", fg="yellow")
    details = printable(", ".join(f"{key} {value}" for key, value in mark.data.items()))
    return click.style(f"  {stamp} ⋯ {mark.type}" + (f": {details}" if details else ""), fg="magenta")


REQUEST_MARKS = frozenset({"http.requested", "http.refused"})


def request_summary(mark: ContextMark) -> str:
    """A request the orchestrator made for the agent: `GET URL → 200 · 512 bytes · 0.02 s`."""
    data = mark.data
    request = f"{data.get('method')} {_short(str(data.get('url', '')), 200)}"
    if mark.type == "http.refused":
        return f"{request} refused: {data.get('rule')}"
    if data.get("status") is None:
        return f"{request} failed: {data.get('detail')}"
    return f"{request} → {data.get('status')} · {data.get('bytes')} bytes · {data.get('duration_s')} s"


def render_turn(turn: TranscriptTurn) -> list[str]:
    """The turn's header, then its messages and context marks in time order."""
    sources = turn.run.tool_sources if turn.run is not None else {}
    timed: list[tuple[str, list[str]]] = [(m.at, message_lines(m, sources)) for m in turn.messages]
    timed += [(mark.at.isoformat().replace("+00:00", "Z"), [mark_line(mark)]) for mark in turn.marks]
    timed.sort(key=lambda pair: pair[0])
    return [turn_header(turn), *(line for _, lines in timed for line in lines)]


def _fetch(client: ApiClient, agent: str, **params: object) -> Transcript:
    return Transcript.model_validate(client.get(f"/api/v1/agents/{agent}/history", **params))


@click.command()
@fleet_file_option
@click.option(
    "-n",
    "--limit",
    type=click.IntRange(1, MAX_TURNS),
    default=10,
    show_default=True,
    help="The last N turns.",
)
@follow_option("Keep printing new messages as the agent logs them.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (with --follow: one turn per line).")
@click.argument("agent")
def history(fleet_file: Path, limit: int, follow: bool, as_json: bool, agent: str) -> None:
    """Show what AGENT did: its turns with messages, tool calls and their results, model, tokens,
    cost and duration, and where its context was flushed or compacted."""
    client = client_for(fleet_file, timeout_s=60)
    try:
        transcript = _fetch(client, agent, limit=limit)
        if as_json and not follow:
            click.echo(transcript.model_dump_json(indent=2))
            return
        _print(transcript, as_json)
        if follow:
            _follow(client, agent, transcript, as_json)
    finally:
        client.close()


def _print(transcript: Transcript, as_json: bool) -> None:
    if as_json:
        for turn in transcript.turns:
            click.echo(turn.model_dump_json())
        return
    if transcript.earlier:
        click.echo(click.style("(earlier turns not shown: -n shows more)", dim=True))
    if not transcript.turns:
        click.echo(f"{transcript.agent} has no turns logged yet")
    for turn in transcript.turns:
        click.echo("\n".join(render_turn(turn)))


def _follow(client: ApiClient, agent: str, transcript: Transcript, as_json: bool) -> None:
    """Poll for messages logged after the last one shown; a turn shown while it ran gets its
    run summary once its run record arrives."""
    last_id = transcript.last_id
    pending: set[str] = {t.item_id for t in transcript.turns if t.run is None and t.item_id}
    current = transcript.turns[-1].item_id if transcript.turns else None
    while True:
        time.sleep(FOLLOW_EVERY_S)
        page = _fetch(client, agent, after=last_id) if last_id else _fetch(client, agent, limit=1)
        last_id = page.last_id or last_id
        for turn in page.turns:
            if as_json:
                click.echo(turn.model_dump_json())
                continue
            lines = render_turn(turn)
            click.echo("\n".join(lines if turn.item_id != current else lines[1:]))
            current = turn.item_id
            if turn.run is None and turn.item_id:
                pending.add(turn.item_id)
        for item_id in sorted(pending & page.finished.keys()):
            pending.discard(item_id)
            run = page.finished[item_id]
            if as_json:
                click.echo(json.dumps({"item_id": item_id, "run": run.model_dump(mode="json")}))
            else:
                click.echo(click.style(f"  └ item {item_id[:12]}: ", bold=True) + run_summary(run))

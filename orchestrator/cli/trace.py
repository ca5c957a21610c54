"""`flotilla trace ID`: the path of a request across agents, with timings.

ID is any unique prefix of a message id, an inbox item id or an operator message's id (the
12-character ids `flotilla inbox` shows are enough).
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from urllib.parse import quote

import click

from orchestrator.broker import RequestTrace, TraceStep
from orchestrator.cli.common import client_for
from orchestrator.cli.options import fleet_file_option
from orchestrator.cli.terminal import printable

SHORT_ID = 12


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def step_line(step: TraceStep, started: float, asked: str) -> str:
    what = {
        "ask": f"ask {step.operation}",
        "peer_ask": f"ask {step.operation}",
        "operator_message": "operator message",
    }.get(step.kind, step.kind.replace("peer_", ""))
    state = step.state + (f" ({printable(step.error)})" if step.error else "")
    took = f" in {_ms(step.took_s)}" if step.took_s is not None else ""
    offset = f"+{step.created_at.timestamp() - started:7.3f}s"
    marker = "*" if asked in (step.id, step.item_id) else "-"
    line = (
        f"{'  ' * step.depth}{marker} {offset} {step.sender} -> {step.recipient} {what}: {state}{took}"
        f"  [{step.id[:SHORT_ID]}]"
    )
    details = []
    if step.queued_s is not None:
        details.append(f"waited {_ms(step.queued_s)} in the inbox")
    if step.run is not None:
        run = step.run
        details.append(
            f"turn {printable(run.model or '-')} {run.tokens_in}→{run.tokens_out} tokens ${run.cost_usd:.4f} "
            f"{_ms(run.duration_s)} {run.outcome}"
        )
    if details:
        line += "\n" + "  " * step.depth + "    " + " · ".join(details)
    return line


def render_trace(found: RequestTrace) -> list[str]:
    first = found.steps[0] if found.steps else None
    header = f"request {found.root_id[:SHORT_ID]}"
    if first is not None:
        header += f" started {first.created_at:%Y-%m-%d %H:%M:%S} UTC"
    header += f" · {len(found.steps)} step{'s' if len(found.steps) != 1 else ''}"
    header += f" · took {_ms(found.took_s)}" if found.took_s is not None else " · not finished"
    started = first.created_at.timestamp() if first is not None else 0.0
    return [
        header,
        "path: " + " -> ".join(found.path),
        *(step_line(s, started, found.asked) for s in found.steps),
    ]


@click.command()
@fleet_file_option
@click.option("--json", "as_json", is_flag=True, help="Print the trace as JSON.")
@click.argument("message_id")
def trace(fleet_file: Path, as_json: bool, message_id: str) -> None:
    """Show the path of a request through agents, with timings. MESSAGE_ID is any unique prefix
    of a message id, an inbox item id or an operator message's id."""
    with closing(client_for(fleet_file)) as client:
        found = RequestTrace.model_validate(client.get(f"/api/v1/traces/{quote(message_id, safe='')}"))
    if as_json:
        click.echo(found.model_dump_json(indent=2))
        return
    click.echo("\n".join(render_trace(found)))

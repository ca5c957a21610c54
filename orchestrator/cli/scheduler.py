"""`flotilla runs [AGENT]` and `flotilla heartbeat AGENT [--check]`."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from orchestrator.cli.common import client_for
from orchestrator.cli.options import fleet_file_option
from orchestrator.cli.terminal import echo, markup_safe
from orchestrator.scheduler.models import HeartbeatStatus, TickResult
from orchestrator.scheduler.runs import RunView

DETAIL_WIDTH = 60


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment else "-"


def _tokens(run: RunView) -> str:
    return f"{run.tokens_in}/{run.tokens_out}" if run.kind == "turn" else "0"


def _outcome_style(outcome: str) -> str:
    return {"idle": "dim", "skipped": "yellow", "run": "green", "ok": "green", "error": "red"}.get(
        outcome, ""
    )


def runs_table(runs: list[RunView]) -> Table:
    table = Table(title="Runs (newest first; times in UTC)", show_lines=False)
    for column in ("started", "agent", "kind", "trigger", "outcome", "model", "tokens in/out", "cost $"):
        table.add_column(column, no_wrap=True)
    table.add_column("dur s", justify="right")
    table.add_column("files")
    table.add_column("detail", overflow="fold", max_width=DETAIL_WIDTH)
    for run in runs:
        table.add_row(
            _when(run.started_at),
            run.agent,
            run.kind,
            run.trigger,
            f"[{_outcome_style(run.outcome)}]{run.outcome}[/]"
            if _outcome_style(run.outcome)
            else run.outcome,
            markup_safe(run.model or "-"),
            _tokens(run),
            f"{run.cost_usd:.4f}",
            f"{run.duration_s:.2f}",
            str(len(run.files_changed)) if run.files_changed else "",
            markup_safe(run.detail),
        )
    return table


@click.command()
@fleet_file_option
@click.option("-n", "--limit", type=click.IntRange(1, 1000), default=30, show_default=True)
@click.option(
    "--kind",
    type=click.Choice(["tick", "turn", "notify"]),
    default=None,
    help="Only ticks, turns or notifications.",
)
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.argument("agent", required=False)
def runs(fleet_file: Path, limit: int, kind: str | None, as_json: bool, agent: str | None) -> None:
    """List run records: heartbeat ticks (idle / skipped / run), agent turns and notifications."""
    client = client_for(fleet_file)
    try:
        raw = client.get("/api/v1/runs", agent=agent, limit=limit, kind=kind)
    finally:
        client.close()
    records = [RunView.model_validate(item) for item in raw]
    if as_json:
        click.echo(json.dumps([r.model_dump(mode="json") for r in records], indent=2))
        return
    if not records:
        echo("no runs recorded yet" + (f" for {agent}" if agent else ""))
        return
    Console().print(runs_table(records))


def _print_status(status: HeartbeatStatus) -> None:
    console = Console()
    if status.schedule is None:
        console.print(f"{status.agent}: no heartbeat configured (rules are only checked on heartbeats)")
    else:
        console.print(
            f"{status.agent}: {status.schedule}, missed runs: {status.missed}; "
            f"next tick {_when(status.next_run)} UTC, last tick {_when(status.last_tick)} UTC"
        )
    if status.hibernate_after_s is not None:
        state = "hibernated" if status.hibernated else "awake"
        console.print(f"hibernates after {status.hibernate_after_s:g}s idle; now {state}")
    console.print(
        f"heartbeat model: {status.heartbeat_model or 'the agent model'}; rules from {status.rules_source}"
    )
    if status.rules:
        table = Table(title="Rules")
        for column in ("line", "when", "task", "last done", "next due", "due"):
            table.add_column(column)
        for rule in status.rules:
            table.add_row(
                str(rule.line),
                rule.when,
                rule.task,
                _when(rule.last_done),
                _when(rule.next_due),
                "yes" if rule.due else "",
            )
        console.print(table)
    else:
        console.print("no rules")
    for error in status.errors:
        where = f"line {error.line}" if error.line else status.rules_source
        echo(f"error: {status.rules_source} {where}: {error.text!r}: {error.message}", err=True)


@click.command()
@fleet_file_option
@click.option("--check", is_flag=True, help="Show the schedule and rules, and report bad rules (exit 1).")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.argument("agent")
def heartbeat(fleet_file: Path, check: bool, as_json: bool, agent: str) -> None:
    """Run one heartbeat tick of AGENT now and print what it did (idle costs no model call)."""
    client = client_for(fleet_file)
    try:
        path = f"/api/v1/agents/{agent}/heartbeat"
        body = client.get(path) if check else client.post(path)
    finally:
        client.close()
    if check:
        _report_check(HeartbeatStatus.model_validate(body), as_json)
    else:
        _report_tick(agent, TickResult.model_validate(body), as_json)


def _report_check(status: HeartbeatStatus, as_json: bool) -> None:
    if as_json:
        click.echo(status.model_dump_json(indent=2))
    else:
        _print_status(status)
    if status.errors:
        raise SystemExit(1)


def _report_tick(agent: str, result: TickResult, as_json: bool) -> None:
    if as_json:
        click.echo(result.model_dump_json(indent=2))
        return
    echo(f"{agent}: {result.summary()}")
    for reason in result.reasons:
        echo(f"  - {reason.kind}: {reason.detail}")

"""`flotilla limits`: each agent's fair share: the rates in force, who was refused and who is
over a rate now, and what each agent's records take against the retention bound."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from orchestrator.cli.common import client_for
from orchestrator.cli.options import fleet_file_option
from orchestrator.config.units import format_bytes
from orchestrator.fair_share.view import FairShareView


def _rates_line(view: FairShareView) -> str:
    rates = view.rates
    return (
        f"rates: events {rates.events} · runs {rates.runs} · tells {rates.tells} · asks {rates.asks} · pair {rates.pair}"
        f" ({rates.pair_bytes}) · intake {rates.intake} · pending {rates.pending}"
    )


def refusals_table(view: FairShareView) -> Table:
    table = Table(title="refusals since the orchestrator started", title_justify="left")
    for column in ("agent", "limit", "subject", "rate", "refused", "now"):
        table.add_column(column, justify="right" if column == "refused" else "left")
    for state in view.agents:
        now = (
            f"[red]limited since {state.limited_since:%H:%M:%S} ({state.episode_refused})[/red]"
            if state.limited_since
            else "[green]within[/green]"
        )
        table.add_row(
            escape(state.agent), state.limit, escape(state.subject), state.rate, str(state.refused), now
        )
    return table


def stored_table(view: FairShareView) -> Table:
    bound = view.per_agent_bound_bytes
    table = Table(title=f"records kept per agent (bound {format_bytes(bound)})", title_justify="left")
    for column in ("agent", "events", "messages", "inbox", "runs", "total"):
        table.add_column(column, justify="left" if column == "agent" else "right")
    for stored in view.stored:
        total = format_bytes(stored.total)
        table.add_row(
            escape(stored.agent),
            *(format_bytes(size) for size in (stored.events, stored.messages, stored.inbox, stored.runs)),
            f"[red]{total}[/red]" if stored.total > bound else total,
        )
    return table


@click.command()
@fleet_file_option
@click.option("--json", "as_json", is_flag=True, help="Print the view as JSON.")
def limits(fleet_file: Path, as_json: bool) -> None:
    """Each agent's fair share: rates, refusals, and what its records take."""
    client = client_for(fleet_file)
    try:
        view = FairShareView.model_validate(client.get("/api/v1/limits"))
    finally:
        client.close()
    if as_json:
        click.echo(view.model_dump_json(indent=2))
        return
    console = Console()
    console.print(_rates_line(view))
    console.print(refusals_table(view) if view.agents else "no agent was refused by a rate")
    console.print(stored_table(view))

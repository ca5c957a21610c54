"""`flotilla costs`: what each agent has spent today and this month, against its budgets."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from orchestrator.cli.common import client_for
from orchestrator.cli.options import fleet_file_option
from orchestrator.gateway.models import AgentCosts, BudgetWindow, CostsReport

_WARN_FRACTION = 0.8


def _usd(value: float) -> str:
    if value < 0.01:
        return f"${value:.6f}"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def _tokens(value: int) -> str:
    return f"{value:,}"


def _budget_cell(windows: list[BudgetWindow]) -> str:
    if not windows:
        return "[dim]none[/dim]"
    parts = []
    for window in windows:
        style = "red" if window.exhausted else "yellow" if window.fraction >= _WARN_FRACTION else "green"
        parts.append(f"[{style}]{window.kind} {100 * window.fraction:.0f}%[/{style}]")
    return " · ".join(parts)


def _peer_cell(agent: AgentCosts) -> str:
    """Who asks pays: what peers did for this agent's items (in its spend), and what it did for
    theirs (in their spend, not its own)."""
    if not (agent.paid_for_peers_today_usd or agent.worked_for_peers_today_usd):
        return "[dim]-[/dim]"
    return f"paid {_usd(agent.paid_for_peers_today_usd)} · did {_usd(agent.worked_for_peers_today_usd)}"


def costs_table(report: CostsReport) -> Table:
    table = Table(title=f"spend at {report.at:%Y-%m-%d %H:%M} UTC", title_justify="left")
    table.add_column("agent")
    for column in ("today", "month", "tokens today", "tokens month", "calls today"):
        table.add_column(column, justify="right")
    table.add_column("budget")
    table.add_column("peers' items today")
    for agent in report.agents:
        name = agent.agent if agent.can_spend else f"{agent.agent} [red](over budget)[/red]"
        table.add_row(
            name,
            _usd(agent.today_usd),
            _usd(agent.month_usd),
            _tokens(agent.today_tokens),
            _tokens(agent.month_tokens),
            str(agent.calls_today),
            _budget_cell(agent.budget),
            _peer_cell(agent),
        )
    fleet = report.fleet
    table.add_section()
    table.add_row(
        "[bold]fleet[/bold]",
        _usd(fleet.today_usd),
        _usd(fleet.month_usd),
        _tokens(fleet.today_tokens),
        _tokens(fleet.month_tokens),
        str(fleet.calls_today),
        _budget_cell(report.fleet_budget),
        "",
    )
    return table


@click.command()
@fleet_file_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def costs(fleet_file: Path, as_json: bool) -> None:
    """Spend per agent (today, this month) and how much of each budget is used."""
    client = client_for(fleet_file)
    try:
        report = CostsReport.model_validate(client.get("/api/v1/costs"))
    finally:
        client.close()
    if as_json:
        click.echo(report.model_dump_json(indent=2))
        return
    Console().print(costs_table(report))

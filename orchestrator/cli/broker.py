"""`flotilla contracts check` and `flotilla inbox AGENT` (`flotilla trace` is in `orchestrator.cli.trace`)."""

from __future__ import annotations

import json
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click

from orchestrator.broker import ContractsReport, check_offline
from orchestrator.cli.common import client_for, load_or_exit
from orchestrator.cli.options import fleet_file_option
from orchestrator.cli.terminal import echo, one_line
from orchestrator.cli.trace import trace

EXIT_CONTRACT_ERRORS = 1


def _table(headers: list[str], rows: list[list[str]]) -> None:
    rows = [[one_line(cell) for cell in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    echo("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for row in rows:
        echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _clock(value: str | None) -> str:
    if not value:
        return "-"
    return datetime.fromisoformat(value).strftime("%H:%M:%S.%f")[:-3]


def _short(value: Any, limit: int = 48) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------------- contracts


@click.group()
def contracts() -> None:
    """Check the INTERFACE.md contracts of the fleet."""


@contracts.command("check")
@fleet_file_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def contracts_check(fleet_file: Path, as_json: bool) -> None:
    """Every contract parses, schemas are valid, talks_to and referenced operations agree.

    Works offline from fleet.yaml and the workspaces next to it; exits 1 when an error is found.
    """
    report = check_offline(load_or_exit(fleet_file, contracts=False))
    if as_json:
        click.echo(report.model_dump_json(indent=2))
    else:
        _print_report(report)
    if not report.ok:
        raise SystemExit(EXIT_CONTRACT_ERRORS)


def _print_report(report: ContractsReport) -> None:
    _table(
        ["AGENT", "OPERATIONS", "TALKS TO", "CONTRACT FROM"],
        [
            [
                agent.agent,
                ", ".join(agent.operations) or "-",
                ", ".join(agent.talks_to) or "-",
                agent.source,
            ]
            for agent in report.agents
        ],
    )
    if report.issues:
        echo()
    for issue in report.issues:
        echo(f"{issue.level}: {issue.agent}: {issue.message}")
    errors = sum(issue.level == "error" for issue in report.issues)
    warnings = len(report.issues) - errors
    verdict = "contracts OK" if report.ok else "contracts BROKEN"
    echo(f"\n{verdict}: {errors} error(s), {warnings} warning(s)")


# ------------------------------------------------------------------------------------- inbox


@click.command()
@fleet_file_option
@click.option("-a", "--all", "show_all", is_flag=True, help="Include finished items.")
@click.option("-n", "--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the items as a JSON array.")
@click.argument("agent")
def inbox(fleet_file: Path, show_all: bool, limit: int, as_json: bool, agent: str) -> None:
    """List AGENT's inbox: what waits for it (with --all, what it already handled)."""
    with closing(client_for(fleet_file)) as client:
        items = client.get(f"/api/v1/agents/{quote(agent, safe='')}/inbox", all=show_all, limit=limit)
    if as_json:
        click.echo(json.dumps(items, indent=2))
        return
    if not items:
        echo(f"{agent}'s inbox is empty" + ("" if show_all else " (--all shows finished items)"))
        return
    rows = [
        [
            item["id"][:12],
            _clock(item["created_at"]),
            item["kind"],
            item["sender"],
            item.get("operation") or "-",
            str(item["attempt"]),
            " -> ".join([*item["trace"], agent]) if item["trace"] else "-",
            _short(item.get("input") if item.get("operation") else item.get("text", "")),
        ]
        for item in items
    ]
    _table(["ID", "CREATED", "KIND", "FROM", "OPERATION", "TRY", "CHAIN", "CONTENT"], rows)


__all__ = ["contracts", "inbox", "trace"]

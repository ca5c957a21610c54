"""`flotilla approvals`, `flotilla approve ID`, `flotilla deny ID`: tool calls waiting for the operator."""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path
from typing import Literal

import click
from pydantic import TypeAdapter

from agent_runtime.protocol import ApprovalItem
from orchestrator.cli.common import client_for
from orchestrator.cli.options import fleet_file_option
from orchestrator.cli.terminal import echo, one_line

_ITEMS = TypeAdapter(list[ApprovalItem])


@click.command()
@fleet_file_option
@click.option("--all", "show_all", is_flag=True, help="Decided and expired items too, not only pending ones.")
@click.option("-n", "--limit", default=50, show_default=True, type=click.IntRange(1, 1000), help="How many.")
@click.option("--json", "as_json", is_flag=True, help="Print the items as JSON.")
def approvals(fleet_file: Path, show_all: bool, limit: int, as_json: bool) -> None:
    """Tool calls waiting for approval (fleet.yaml `tools.rules`): id, agent, tool, arguments."""
    with closing(client_for(fleet_file)) as client:
        state = None if show_all else "pending"
        items = _ITEMS.validate_python(client.get("/api/v1/approvals", state=state, limit=limit))
    if as_json:
        click.echo(json.dumps([item.model_dump(mode="json") for item in items], indent=2))
        return
    if not items:
        echo("no tool call is waiting for approval" if not show_all else "no approval items")
        return
    for item in items:
        arguments = json.dumps(item.arguments, sort_keys=True)
        if len(arguments) > 120:
            arguments = arguments[:117] + "..."
        until = f"until {item.expires_at:%H:%M:%S}" if item.state == "pending" else item.reason
        echo(one_line(f"{item.id}  {item.state:<8} {item.agent:<12} {item.tool:<24} {arguments}  {until}"))


def _decide(fleet_file: Path, approval_id: str, decision: Literal["approve", "deny"], reason: str) -> None:
    with closing(client_for(fleet_file)) as client:
        raw = client.post(f"/api/v1/approvals/{approval_id}/{decision}", {"reason": reason})
    item = ApprovalItem.model_validate(raw)
    echo(one_line(f"{item.id} {item.state}: {item.agent} {item.tool}"))


@click.command()
@fleet_file_option
@click.argument("approval_id")
@click.option("--reason", default="", help="Told to the agent with the decision.")
def approve(fleet_file: Path, approval_id: str, reason: str) -> None:
    """Let a waiting tool call run."""
    _decide(fleet_file, approval_id, "approve", reason)


@click.command()
@fleet_file_option
@click.argument("approval_id")
@click.option("--reason", default="", help="Told to the agent with the decision.")
def deny(fleet_file: Path, approval_id: str, reason: str) -> None:
    """Refuse a waiting tool call: the agent is told it was denied, and why."""
    _decide(fleet_file, approval_id, "deny", reason)

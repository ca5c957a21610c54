"""`flotilla workflow ls|run|show|cancel|retry`: the workflows of fleet.yaml and their runs."""

from __future__ import annotations

import json
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import click

from orchestrator.cli.client import ApiClient
from orchestrator.cli.common import client_for
from orchestrator.cli.errors import BadInput
from orchestrator.cli.options import fleet_file_option
from orchestrator.cli.terminal import echo, one_line
from orchestrator.workflows.store import WorkflowRun

WAIT_POLL_S = 0.5


@click.group()
def workflow() -> None:
    """Workflows (fleet.yaml `workflows:`): declared steps across agents, run durably."""


@workflow.command("ls")
@fleet_file_option
@click.option("--json", "as_json", is_flag=True, help="Print the workflows as JSON.")
def list_workflows(fleet_file: Path, as_json: bool) -> None:
    """The declared workflows: trigger, steps, and their runs by state."""
    with closing(client_for(fleet_file)) as client:
        found: list[dict[str, Any]] = client.get("/api/v1/workflows")
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    if not found:
        echo("no workflow is declared in fleet.yaml")
        return
    for entry in found:
        runs = ", ".join(f"{state} {count}" for state, count in sorted(entry["runs"].items())) or "no runs"
        echo(one_line(f"{entry['name']:<20} {entry['trigger']:<16} {' -> '.join(entry['steps'])}  ({runs})"))


@workflow.command("run")
@fleet_file_option
@click.argument("name")
@click.option("--input", "input_json", default="{}", help="The run's input, a JSON object.")
@click.option("--wait", is_flag=True, help="Wait until the run finishes, then show it.")
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON.")
def run(fleet_file: Path, name: str, input_json: str, wait: bool, as_json: bool) -> None:
    """Start a run of workflow NAME; prints the run's id."""
    run_input = _input_object(input_json)
    with closing(client_for(fleet_file)) as client:
        started = WorkflowRun.model_validate(
            client.post(f"/api/v1/workflows/{name}/runs", {"input": run_input})
        )
        if wait:
            started = _wait(client, started)
    if as_json:
        click.echo(started.model_dump_json(indent=2))
    elif wait:
        _show(started)
    else:
        echo(started.id)


def _input_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as bad:
        raise BadInput(f"--input is not JSON: {bad.msg} at character {bad.pos}") from None
    if not isinstance(value, dict):
        raise BadInput(f"--input must be a JSON object, not {type(value).__name__}")
    return value


def _wait(client: ApiClient, run: WorkflowRun) -> WorkflowRun:
    told: set[str] = set()
    while run.state == "running":
        for step in run.steps:
            if step.state == "approval" and step.approval_id and step.approval_id not in told:
                told.add(step.approval_id)
                echo(f"step {step.step} waits for approval: flotilla approve {step.approval_id}", err=True)
        time.sleep(WAIT_POLL_S)
        run = WorkflowRun.model_validate(client.get(f"/api/v1/workflow-runs/{run.id}"))
    return run


@workflow.command("show")
@fleet_file_option
@click.argument("run_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the run (or the runs) as JSON.")
@click.option(
    "-n",
    "--limit",
    default=20,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="Runs listed without RUN_ID.",
)
def show(fleet_file: Path, run_id: str | None, as_json: bool, limit: int) -> None:
    """A run step by step (state, attempts, agent, timings, tokens, cost, output or error); without
    RUN_ID, the latest runs."""
    with closing(client_for(fleet_file)) as client:
        if run_id is None:
            runs = [WorkflowRun.model_validate(r) for r in client.get("/api/v1/workflow-runs", limit=limit)]
        else:
            runs = [WorkflowRun.model_validate(client.get(f"/api/v1/workflow-runs/{run_id}"))]
    if as_json:
        dumped = [r.model_dump(mode="json") for r in runs]
        click.echo(json.dumps(dumped[0] if run_id is not None else dumped, indent=2))
        return
    if run_id is None:
        for found in runs:
            echo(
                one_line(
                    f"{found.id}  {found.workflow:<16} {found.state:<10} {found.created_at:%Y-%m-%d %H:%M:%S}  ${found.cost_usd:.4f}"
                )
            )
        if not runs:
            echo("no workflow runs")
        return
    _show(runs[0])


def _show(run: WorkflowRun) -> None:
    echo(
        f"{run.id}  {run.workflow}  {run.state}  cost ${run.cost_usd:.4f}  started {run.created_at:%Y-%m-%d %H:%M:%S}"
    )
    if run.error:
        echo(one_line(f"  error: {run.error}"))
    for step in run.steps:
        took = ""
        if step.queued_at is not None and step.finished_at is not None:
            took = f"{(step.finished_at - step.queued_at).total_seconds():.1f}s"
        agent = step.agent or "-"
        line = f"  {step.step:<16} {step.state:<10} x{step.attempt} {agent:<14} {took:>7} {step.tokens:>6} tok ${step.cost_usd:.4f}"
        echo(one_line(line))
        if step.approval_id and step.state == "approval":
            echo(f"      waits for: flotilla approve {step.approval_id}")
        detail = step.error if step.state in ("failed", "skipped", "cancelled", "retry_wait") else None
        if detail is None and step.output is not None:
            detail = json.dumps(step.output, ensure_ascii=False)
        if detail:
            echo(one_line(f"      {detail[:300]}"))


def _act(fleet_file: Path, run_id: str, action: str) -> None:
    with closing(client_for(fleet_file)) as client:
        acted = WorkflowRun.model_validate(client.post(f"/api/v1/workflow-runs/{run_id}/{action}"))
    echo(f"{acted.id} {acted.state}")


@workflow.command("cancel")
@fleet_file_option
@click.argument("run_id")
def cancel(fleet_file: Path, run_id: str) -> None:
    """Stop a run: its items out are closed, its waiting steps cancelled."""
    _act(fleet_file, run_id, "cancel")


@workflow.command("retry")
@fleet_file_option
@click.argument("run_id")
def retry(fleet_file: Path, run_id: str) -> None:
    """Run a failed or cancelled run again from where it stopped (finished steps keep their results)."""
    _act(fleet_file, run_id, "retry")

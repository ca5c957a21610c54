"""Operator routes of workflows: the declared workflows, starting a run, following, cancelling
and retrying one."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.services import Services
from orchestrator.workflows.engine import UnknownRun, WorkflowRefused
from orchestrator.workflows.store import WorkflowRun

router = APIRouter(prefix="/api/v1", tags=["operator"])


class WorkflowSummary(BaseModel):
    name: str
    description: str
    trigger: str
    steps: list[str]
    depends_on: dict[str, list[str]] = Field(description="Each step's dependencies: the graph")
    runs: dict[str, int] = Field(description="This workflow's stored runs by state")


class RunRequest(BaseModel):
    input: dict[str, Any] = Field(
        default_factory=dict, description="The run's input (checked against its schema)"
    )


@router.get("/workflows")
def list_workflows(services: ServicesDep, _: OperatorDep) -> list[WorkflowSummary]:
    declared = services.fleet.config.workflows
    counts: dict[str, dict[str, int]] = {name: {} for name in declared}
    for run in services.workflows.store.recent(limit=1000):
        if run.workflow in counts:
            counts[run.workflow][run.state] = counts[run.workflow].get(run.state, 0) + 1
    return [
        WorkflowSummary(
            name=name,
            description=workflow.description,
            trigger=workflow.trigger
            if isinstance(workflow.trigger, str)
            else _trigger_text(workflow.trigger),
            steps=list(workflow.steps),
            depends_on={step: list(config.depends_on) for step, config in workflow.steps.items()},
            runs=counts[name],
        )
        for name, workflow in sorted(declared.items())
    ]


def _trigger_text(trigger: Any) -> str:
    return ", ".join(f"{key}: {value}" for key, value in trigger.model_dump(exclude_none=True).items())


@router.post("/workflows/{name}/runs")
def start_run(name: str, body: RunRequest, services: ServicesDep, _: OperatorDep) -> WorkflowRun:
    try:
        return services.workflows.start(name, body.input)
    except WorkflowRefused as refused:
        code = 404 if name not in services.fleet.config.workflows else 422
        raise ApiError(code, "not_found" if code == 404 else "invalid_input", str(refused)) from None


@router.get("/workflow-runs")
def list_runs(
    services: ServicesDep,
    _: OperatorDep,
    workflow: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> list[WorkflowRun]:
    """Newest first."""
    return services.workflows.store.recent(workflow, limit)


@router.get("/workflow-runs/{run_id}")
def show_run(run_id: str, services: ServicesDep, _: OperatorDep) -> WorkflowRun:
    """A run by its id or the first characters of it."""
    found = services.workflows.store.get(_full_id(services, run_id))
    if found is None:  # pruned between the two reads
        raise ApiError(404, "not_found", f"there is no workflow run {run_id!r}")
    return found


@router.post("/workflow-runs/{run_id}/{action}")
def act_on_run(
    run_id: str, action: Literal["cancel", "retry"], services: ServicesDep, _: OperatorDep
) -> WorkflowRun:
    full = _full_id(services, run_id)
    try:
        if action == "cancel":
            return services.workflows.cancel(full)
        return services.workflows.retry(full)
    except WorkflowRefused as refused:
        raise ApiError(409, "conflict", str(refused)) from None
    except UnknownRun as unknown:
        raise ApiError(404, "not_found", str(unknown)) from None


def _full_id(services: Services, run_id: str) -> str:
    found = services.workflows.store.find(run_id)
    if run_id in found:
        return run_id
    if not found:
        raise ApiError(404, "not_found", f"there is no workflow run {run_id!r}")
    if len(found) > 1:
        raise ApiError(409, "ambiguous", f"{run_id!r} starts several runs: {', '.join(found)}")
    return found[0]

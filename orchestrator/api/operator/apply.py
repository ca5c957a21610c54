"""Operator route `POST /api/v1/apply`: read a fleet file, check it is this fleet's, and plan or apply it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.backends.base import BackendError
from orchestrator.config.fleet import ConfigError, LoadedFleet
from orchestrator.config.loader import load_fleet
from orchestrator.config.settings import fleet_changes
from orchestrator.fleet.reconcile import PlanAction
from orchestrator.fleet.seeding import SEEDED_FILES, SeedChange
from orchestrator.images.names import base_image, same_agent_image
from orchestrator.services import Services

router = APIRouter(prefix="/api/v1", tags=["operator"])


class PlannedAction(BaseModel):
    kind: str
    agent: str
    reason: str
    fields: list[str] = Field(default_factory=list, description="The settings that change")


class PlannedSeed(BaseModel):
    agent: str
    file: str
    status: Literal["write", "conflict"] = Field(
        description="write: fleet.yaml's text is (was) written; conflict: the file changed since it was "
        "seeded and is kept as it is, which no apply changes (not a pending change)"
    )


class PlanOut(BaseModel):
    actions: list[str] = Field(description="One line per action, as `flotilla apply` prints them")
    changed: bool = Field(
        description="True when anything is (or was) to be done; a seed conflict alone is not a change"
    )
    plan: list[PlannedAction] = Field(default_factory=list)
    seeds: list[PlannedSeed] = Field(default_factory=list, description="fleet.yaml's seeds that differ")
    fleet_changes: list[str] = Field(
        default_factory=list,
        description="Fleet-wide settings that change (budget keys, alerts, limits, secrets...): in force at once",
    )
    file: str = Field(default="", description="The fleet file that was read")
    image: str = Field(default="", description="The image agents created or recreated from now on run")


def read_candidate(services: Services, file: str | None) -> LoadedFleet:
    """The fleet file to apply, validated as `flotilla validate` would (engine limits included)."""
    in_force = services.fleet
    path = Path(file) if file else in_force.path
    if path.resolve().parent != in_force.root.resolve():
        raise ApiError(
            409,
            "other_fleet",
            f"{path} is not in the folder of the fleet this orchestrator runs ({in_force.root}); nothing changed",
        )
    try:
        candidate = load_fleet(path, capacity=services.backend.capacity())
    except ConfigError as exc:
        raise ApiError(
            422, "invalid_fleet", f"{path} is invalid; nothing changed", [str(p) for p in exc.problems]
        ) from None
    if candidate.name != in_force.name:
        raise ApiError(
            409,
            "other_fleet",
            f"{path} declares fleet {candidate.name!r}, but this orchestrator runs fleet {in_force.name!r}: "
            "nothing changed (rename it back, or `flotilla down` then `up` to replace the fleet)",
        )
    return candidate


def plan_out(
    actions: list[PlanAction],
    file: Path,
    seeds: list[SeedChange] | None = None,
    image: str = "",
    fleet_wide: list[str] | None = None,
) -> PlanOut:
    seeded = [s for s in seeds or [] if s.status != "same"]
    fleet_lines = (
        [f"* update   {'(fleet)':<20} {', '.join(fleet_wide)} (in force at once)"] if fleet_wide else []
    )
    return PlanOut(
        actions=[str(a) for a in actions if a.pending] + fleet_lines + [str(s) for s in seeded],
        changed=any(a.pending for a in actions)
        or bool(fleet_wide)
        or any(s.status == "write" for s in seeded),
        plan=[
            PlannedAction(kind=a.kind, agent=a.agent, reason=a.reason, fields=[c.field for c in a.changes])
            for a in actions
        ],
        seeds=[
            PlannedSeed(agent=s.agent, file=s.file, status="write" if s.status == "write" else "conflict")
            for s in seeded
        ],
        file=str(file),
        image=image,
        fleet_changes=list(fleet_wide or []),
    )


@router.post("/apply")
async def apply_fleet(
    _: OperatorDep,
    services: ServicesDep,
    dry_run: Annotated[bool, Query()] = False,
    file: Annotated[
        str | None, Query(description="The fleet file to apply (default: the one in force)")
    ] = None,
    force_seed: Annotated[
        list[str] | None, Query(description="AGENT/FILE: take fleet.yaml's text over a changed file")
    ] = None,
    image: Annotated[
        str | None,
        Query(
            description="The image agents created or recreated by this apply (and after) run: the agent "
            "image or the fleet's extension of it with the MCP packages fleet.yaml names (docker)"
        ),
    ] = None,
) -> PlanOut:
    """Read the fleet file and reconcile. An invalid file, or another fleet's, changes nothing."""
    if image is not None and not same_agent_image(image, services.manager.image):
        raise ApiError(
            422,
            "invalid_request",
            f"image {image!r} is neither the agent image {base_image(services.manager.image)!r} "
            "nor an extension of it; nothing changed",
        )
    candidate = await asyncio.to_thread(read_candidate, services, file)
    try:
        actions = await asyncio.to_thread(services.manager.plan, candidate)
    except BackendError as exc:
        raise ApiError(503, "backend_unavailable", f"cannot list the fleet's units: {exc}") from None
    forced = _forced_seeds(candidate, force_seed or [])
    fleet_wide = fleet_changes(services.fleet, candidate)
    if dry_run:
        seeds = await asyncio.to_thread(services.manager.plan_seeds, candidate, forced)
        return plan_out(actions, candidate.path, seeds, services.manager.image, fleet_wide)
    if image is not None:
        # Agents whose MCP packages changed are recreated by this plan and take the new image; the
        # others keep theirs, which holds every package their own servers need.
        services.manager.image = image
    results = await asyncio.to_thread(services.manager.apply, lambda _: None, candidate, forced)
    failed = [f"{r.action.agent}: {r.error}" for r in results if not r.ok]
    if failed:
        raise ApiError(502, "apply_failed", "some changes failed", failed)
    return plan_out(actions, candidate.path, services.manager.seeded, services.manager.image, fleet_wide)


def _forced_seeds(fleet: LoadedFleet, pairs: list[str]) -> frozenset[tuple[str, str]]:
    forced = set()
    for pair in pairs:
        agent, _, file = pair.partition("/")
        if agent not in fleet.config.agents or file not in SEEDED_FILES:
            raise ApiError(
                422,
                "invalid_request",
                f"--force-seed {agent} {file}: name an agent of the fleet and one of {', '.join(SEEDED_FILES)}",
            )
        forced.add((agent, file))
    return frozenset(forced)

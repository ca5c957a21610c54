"""`POST /api/v1/apply`: read a fleet file, check it is this fleet's, and plan or apply it."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from orchestrator.api.errors import ApiError
from orchestrator.config.fleet import ConfigError, LoadedFleet
from orchestrator.config.loader import load_fleet
from orchestrator.reconcile import PlanAction
from orchestrator.seeding import SeedChange
from orchestrator.services import Services


class PlannedAction(BaseModel):
    kind: str
    agent: str
    reason: str
    fields: list[str] = Field(default_factory=list, description="The settings that change")


class PlanOut(BaseModel):
    actions: list[str] = Field(description="One line per action, as `flotilla apply` prints them")
    changed: bool = Field(description="True when anything is (or was) to be done")
    plan: list[PlannedAction] = Field(default_factory=list)
    file: str = Field(default="", description="The fleet file that was read")


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


def plan_out(actions: list[PlanAction], file: Path, seeds: list[SeedChange] | None = None) -> PlanOut:
    seeded = [s for s in seeds or [] if s.status != "same"]
    return PlanOut(
        actions=[str(a) for a in actions if a.pending] + [str(s) for s in seeded],
        changed=any(a.pending for a in actions) or bool(seeded),
        plan=[
            PlannedAction(kind=a.kind, agent=a.agent, reason=a.reason, fields=[c.field for c in a.changes])
            for a in actions
        ],
        file=str(file),
    )

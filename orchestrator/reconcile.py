"""Reconcile: compare fleet.yaml with the units that run, and apply only the difference."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

from orchestrator.backends.base import (
    LABEL_ENDPOINT,
    LABEL_FLEET,
    LABEL_LAYOUT,
    LABEL_MANAGED,
    LABEL_STATE,
    STORAGE_LAYOUT,
    AgentSpec,
    Backend,
    BackendError,
    UnitInfo,
)
from orchestrator.config.loader import LoadedFleet

ActionKind = Literal["create", "recreate", "remove", "start", "keep"]
PARALLEL_STARTS = 16


@dataclass(frozen=True)
class PlanAction:
    kind: ActionKind
    agent: str
    reason: str
    unit_id: str | None = None

    def __str__(self) -> str:
        symbol = {"create": "+", "recreate": "~", "remove": "-", "start": ">", "keep": "="}[self.kind]
        return f"{symbol} {self.kind:<8} {self.agent:<20} {self.reason}"


def fleet_labels(fleet: str) -> dict[str, str]:
    return {LABEL_MANAGED: "true", LABEL_FLEET: fleet}


def plan(
    fleet: LoadedFleet,
    units: list[UnitInfo],
    hibernated: frozenset[str] = frozenset(),
    endpoint: str | None = None,
) -> list[PlanAction]:
    """The actions that bring `units` in line with `fleet`. Pure: no backend call.

    With `endpoint`, a unit made to dial another orchestrator address is recreated too.
    """
    by_agent: dict[str, list[UnitInfo]] = {}
    for unit in units:
        by_agent.setdefault(unit.agent, []).append(unit)
    actions: list[PlanAction] = []
    for agent in fleet.config.agents:
        found = by_agent.pop(agent, [])
        wanted = fleet.agent_hash(agent)
        for extra in found[1:]:
            actions.append(PlanAction("remove", agent, "duplicate unit", extra.id))
        if not found:
            actions.append(PlanAction("create", agent, "not running"))
        elif found[0].config_hash != wanted:
            actions.append(PlanAction("recreate", agent, "configuration changed", found[0].id))
        elif _older_layout(found[0]):
            actions.append(PlanAction("recreate", agent, "storage layout changed", found[0].id))
        elif endpoint and found[0].labels.get(LABEL_ENDPOINT, endpoint) != endpoint:
            actions.append(PlanAction("recreate", agent, "the orchestrator's address changed", found[0].id))
        elif found[0].state != "running" and agent not in hibernated:
            actions.append(PlanAction("start", agent, f"unit is {found[0].state}", found[0].id))
        else:
            reason = "hibernated" if agent in hibernated and found[0].state != "running" else "unchanged"
            actions.append(PlanAction("keep", agent, reason, found[0].id))
    for agent, leftovers in sorted(by_agent.items()):
        actions += [PlanAction("remove", agent, "no longer in fleet.yaml", unit.id) for unit in leftovers]
    return actions


def _older_layout(unit: UnitInfo) -> bool:
    """A unit made for another storage layout (units from before layout labels have a state
    label and no layout label) must be recreated: it may share a folder with the host."""
    layout = unit.labels.get(LABEL_LAYOUT)
    return layout != STORAGE_LAYOUT if layout is not None else LABEL_STATE in unit.labels


@dataclass(frozen=True)
class ApplyResult:
    action: PlanAction
    ok: bool
    error: str = ""


def apply(
    actions: list[PlanAction],
    backend: Backend,
    make_spec: Callable[[str], AgentSpec],
    on_done: Callable[[ApplyResult], None] = lambda _: None,
) -> list[ApplyResult]:
    """Carry out a plan, several agents at a time. Each result says what failed and why."""

    def run(action: PlanAction) -> ApplyResult:
        try:
            _apply_one(action, backend, make_spec)
        except (BackendError, OSError) as exc:
            result = ApplyResult(action, False, str(exc))
        else:
            result = ApplyResult(action, True)
        on_done(result)
        return result

    todo = [a for a in actions if a.kind != "keep"]
    with ThreadPoolExecutor(max_workers=PARALLEL_STARTS) as pool:
        return list(pool.map(run, todo))


def _apply_one(action: PlanAction, backend: Backend, make_spec: Callable[[str], AgentSpec]) -> None:
    if action.kind in ("remove", "recreate") and action.unit_id:
        backend.remove(action.unit_id)
    if action.kind in ("create", "recreate"):
        backend.run(make_spec(action.agent))
    elif action.kind == "start" and action.unit_id:
        backend.start(action.unit_id)


def remove_fleet(
    backend: Backend, fleet: str, on_removed: Callable[[UnitInfo], None] = lambda _: None
) -> None:
    """Remove every unit labelled with this fleet, then the fleet's network. Nothing else is touched."""
    for unit in backend.list(fleet_labels(fleet)):
        backend.remove(unit.id)
        on_removed(unit)
    backend.teardown_fleet(fleet)

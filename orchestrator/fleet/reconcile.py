"""Reconcile: compare fleet.yaml with the units that run, and apply only the difference."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
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
    UnitState,
)
from orchestrator.config.fleet import LoadedFleet
from orchestrator.config.settings import EFFECT_NOTES, FieldChange, changes, container_hash
from orchestrator.lifecycle import (
    AgentState,
    Lifecycle,
    LifecycleEvent,
    Policy,
    TransitionRefused,
    state_from_engine,
    state_of,
)

ActionKind = Literal["create", "recreate", "update", "remove", "start", "keep"]
PARALLEL_STARTS = 16
log = logging.getLogger(__name__)
SYMBOLS: dict[ActionKind, str] = {
    "create": "+",
    "recreate": "~",
    "update": "*",
    "remove": "-",
    "start": ">",
    "keep": "=",
}


@dataclass(frozen=True)
class PlanAction:
    kind: ActionKind
    agent: str
    reason: str
    unit_id: str | None = None
    changes: tuple[FieldChange, ...] = ()
    """The settings that differ from the fleet in force, when it is known."""
    start: bool = True
    """False for an agent that sleeps until it has work: its unit is made, not started."""
    unit_state: UnitState | None = None
    """What the engine said of the unit `unit_id` when the plan was made."""

    def __str__(self) -> str:
        return f"{SYMBOLS[self.kind]} {self.kind:<8} {self.agent:<20} {self.reason}"

    @property
    def pending(self) -> bool:
        return self.kind != "keep"


def describe_changes(found: tuple[FieldChange, ...] | list[FieldChange]) -> str:
    """'model, context_window (the agent reloads its config); resources.memory (new container)'."""
    by_effect: dict[str, list[str]] = {}
    for change in found:
        by_effect.setdefault(EFFECT_NOTES[change.effect], []).append(change.field)
    return "; ".join(f"{', '.join(fields)} ({note})" for note, fields in by_effect.items())


def fleet_labels(fleet: str) -> dict[str, str]:
    return {LABEL_MANAGED: "true", LABEL_FLEET: fleet}


def plan(
    fleet: LoadedFleet,
    units: list[UnitInfo],
    held: frozenset[str] = frozenset(),
    endpoint: str | None = None,
    previous: LoadedFleet | None = None,
    sleepers: frozenset[str] = frozenset(),
) -> list[PlanAction]:
    """The actions that bring `units` in line with `fleet`. Pure: no backend call.

    With `endpoint`, a unit made to dial another orchestrator address is recreated too. With
    `previous` (the fleet in force), each action names the settings that change, and an agent
    whose container stays gets an `update` when any of its settings changed. `sleepers` sleep
    until they have work: a unit of theirs that does not run is made or kept, not started.
    """
    by_agent: dict[str, list[UnitInfo]] = {}
    for unit in units:
        by_agent.setdefault(unit.agent, []).append(unit)
    actions: list[PlanAction] = []
    for agent in fleet.config.agents:
        found = by_agent.pop(agent, [])
        known = previous is not None and agent in previous.config.agents
        changed = tuple(changes(previous, fleet, agent)) if previous is not None and known else ()
        for extra in found[1:]:
            actions.append(PlanAction("remove", agent, "duplicate unit", extra.id))
        action = _action_for(fleet, agent, found[0] if found else None, held, endpoint, changed)
        actions.append(_asleep(action, found[0] if found else None) if agent in sleepers else action)
    for agent, leftovers in sorted(by_agent.items()):
        actions += [PlanAction("remove", agent, "no longer in fleet.yaml", unit.id) for unit in leftovers]
    seen = {unit.id: unit.state for unit in units}
    return [replace(action, unit_state=seen.get(action.unit_id or "")) for action in actions]


def _action_for(
    fleet: LoadedFleet,
    agent: str,
    unit: UnitInfo | None,
    held_down: frozenset[str],
    endpoint: str | None,
    changed: tuple[FieldChange, ...],
) -> PlanAction:
    held = agent in held_down
    if unit is None:
        # A held agent (asleep, or stopped by the operator in a restored fleet) gets its
        # unit, with its files, and stays down as it was.
        if held:
            return PlanAction("create", agent, f"not running; {HELD}", None, changed, start=False)
        return PlanAction("create", agent, "not running", None, changed)
    detail = describe_changes(changed)
    if unit.config_hash != container_hash(fleet, agent):
        reason = detail or "container settings changed"
        if held and unit.state != "running":
            return PlanAction("recreate", agent, f"{reason}; {HELD}", unit.id, changed, start=False)
        return PlanAction("recreate", agent, reason, unit.id, changed)
    if _older_layout(unit):
        return PlanAction("recreate", agent, "storage layout changed", unit.id, changed)
    if endpoint and unit.labels.get(LABEL_ENDPOINT, endpoint) != endpoint:
        return PlanAction("recreate", agent, "the orchestrator's address changed", unit.id, changed)
    if unit.state != "running" and agent not in held_down:
        reason = f"unit is {unit.state}" + (f"; {detail}" if detail else "")
        return PlanAction("start", agent, reason, unit.id, changed)
    if changed:
        return PlanAction("update", agent, detail, unit.id, changed)
    reason = "hibernated" if agent in held_down and unit.state != "running" else "unchanged"
    return PlanAction("keep", agent, reason, unit.id)


ASLEEP = "asleep until it has work"
HELD = "held down (hibernated or stopped by the operator): made, not started"


def _asleep(action: PlanAction, unit: UnitInfo | None) -> PlanAction:
    """The action for an agent that sleeps until it has work: its unit is made (or made again)
    but only started when it was running; a stopped one stays stopped."""
    running = unit is not None and unit.state == "running"
    if action.kind in ("create", "recreate") and not running:
        reason = ASLEEP if action.kind == "create" else f"{action.reason}; {ASLEEP}"
        return replace(action, reason=reason, start=False)
    if action.kind == "start":
        return replace(action, kind="keep", reason=ASLEEP, start=False)
    return action


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
    update: Callable[[PlanAction], None] = lambda _: None,
    lifecycle: Lifecycle | None = None,
) -> list[ApplyResult]:
    """Carry out a plan, several agents at a time. Each result says what failed and why.

    `update` brings an agent whose container stays in line (the files it is given); it also runs
    before a `start`, so a stopped agent starts with them. `lifecycle` carries out the transitions
    (by default one over `backend` that records nothing).
    """

    lifecycle = lifecycle or Lifecycle(backend)

    def run(action: PlanAction) -> ApplyResult:
        try:
            _apply_one(action, lifecycle, make_spec, update)
        except (BackendError, OSError, TransitionRefused) as exc:
            result = ApplyResult(action, False, str(exc))
        except Exception as exc:
            # Last resort: one agent's failure, whatever it is, must end neither the others' apply
            # nor the orchestrator; it is logged with its traceback and reported as a failure.
            log.exception("applying %s failed", action)
            result = ApplyResult(
                action, False, f"{type(exc).__name__}: {exc} (a bug: see the orchestrator's log)"
            )
        else:
            result = ApplyResult(action, True)
        on_done(result)
        return result

    todo = [a for a in actions if a.pending]
    with ThreadPoolExecutor(max_workers=PARALLEL_STARTS) as pool:
        return list(pool.map(run, todo))


def _apply_one(
    action: PlanAction,
    lifecycle: Lifecycle,
    make_spec: Callable[[str], AgentSpec],
    update: Callable[[PlanAction], None],
) -> None:
    if action.kind in ("update", "start"):
        update(action)
    if action.kind in ("remove", "recreate") and action.unit_id:
        _request(lifecycle, action, LifecycleEvent.REMOVE)
    if action.kind in ("create", "recreate"):
        # The plan found no unit for a create, and a recreate's was just removed.
        lifecycle.transition(
            action.agent,
            LifecycleEvent.RUN if action.start else LifecycleEvent.CREATE,
            policy=Policy.RECONCILE,
            current=AgentState.ABSENT,
            spec=make_spec(action.agent),
        )
    elif action.kind == "start" and action.unit_id:
        _request(lifecycle, action, LifecycleEvent.START)


def _request(lifecycle: Lifecycle, action: PlanAction, event: LifecycleEvent) -> None:
    assert action.unit_id is not None
    current = state_from_engine(action.unit_state) if action.unit_state is not None else None
    lifecycle.transition(
        action.agent, event, policy=Policy.RECONCILE, unit_id=action.unit_id, current=current
    )


def remove_units(
    backend: Backend, fleet: str, on_removed: Callable[[UnitInfo], None] = lambda _: None
) -> None:
    """Remove every unit labelled with this fleet, several at a time. Nothing else is touched."""

    lifecycle = Lifecycle(backend)

    def remove(unit: UnitInfo) -> None:
        lifecycle.transition(
            unit.agent,
            LifecycleEvent.REMOVE,
            policy=Policy.RECONCILE,
            unit_id=unit.id,
            current=state_of(unit),
        )
        on_removed(unit)

    with ThreadPoolExecutor(max_workers=PARALLEL_STARTS) as pool:
        list(pool.map(remove, backend.list(fleet_labels(fleet))))

"""Turns fleet.yaml into running units: specs, reconcile, re-creation and teardown."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from agent_runtime.protocol import utcnow
from orchestrator.backends.base import AgentSpec, Backend, BackendError, UnitInfo
from orchestrator.backup.link_restore import hold_for_restore
from orchestrator.backup.restore import pending_restores, restore_carried
from orchestrator.config.fleet import LoadedFleet
from orchestrator.config.settings import container_hash
from orchestrator.control.auth import TokenStore
from orchestrator.errors import Refused
from orchestrator.events import EventBus, EventType
from orchestrator.fleet import reconcile
from orchestrator.fleet.placement import placement_of, storage_name_of
from orchestrator.fleet.scaffold import (
    has_previous_layout,
    import_previous_layout,
    prepare_operator_copy,
    previous_layout_folder,
    refresh_generated,
    write_token,
)
from orchestrator.fleet.seeding import SeedChange, plan_seeds, record_seed
from orchestrator.fleet.unit_board import UnitBoard
from orchestrator.fleet.view import FleetView
from orchestrator.images.names import DEFAULT_IMAGE
from orchestrator.lifecycle import (
    ActualStates,
    AgentState,
    Controls,
    DesiredStates,
    Lifecycle,
    LifecycleEvent,
    Policy,
    reported,
    state_of,
)
from orchestrator.state.paths import StatePaths
from orchestrator.workspaces.access import WorkspaceAccess

log = logging.getLogger(__name__)


class FleetManager:
    def __init__(
        self,
        fleet: FleetView,
        paths: StatePaths,
        backend: Backend,
        tokens: TokenStore,
        controls: Controls,
        events: EventBus,
        desired: DesiredStates,
        actual: ActualStates,
        workspaces: WorkspaceAccess,
        image: str = DEFAULT_IMAGE,
    ) -> None:
        """`desired`: each agent's desired state, asleep or awake, which apply keeps and reads;
        `actual`: where what the engine reports of each agent's unit is recorded."""
        self._fleet = fleet
        self._paths = paths
        self._backend = backend
        self._actual = actual
        self.lifecycle = Lifecycle(backend, actual)
        """The transitions of the fleet's units, each recorded as the agent's actual state."""
        self._tokens = tokens
        self._controls = controls
        self._events = events
        self._workspaces = workspaces
        self.image = image
        self.agent_url = ""
        """The orchestrator's address as agents dial it (the fleet network's gateway, or loopback)."""
        self.problems: list[str] = []
        """What the last apply could not do, for `ps`, the dashboard and `up -d`."""
        self._desired = desired
        self.seeded: list[SeedChange] = []
        """What the last apply did with fleet.yaml's seeds (writes and conflicts)."""
        self._carry: dict[str, Path] = {}
        """Agents moved from the previous layout whose own files still wait for their new storage."""
        self._applying = threading.Lock()
        self.board = UnitBoard()
        """The last known unit of every agent, kept by the supervisor's listings."""
        self.migrate_previous_layout()
        self._restoring = pending_restores(self._paths, list(self.fleet.config.agents))
        """Agents whose own files from a backup replace what their storage holds at creation."""
        if backend.carries_storage:
            self._carry.update(self._restoring)
        else:
            # Handed over their links once they run (orchestrator.backup.link_restore);
            # held paused until then, so that they claim nothing on empty storage.
            hold_for_restore(paths, controls, list(self._restoring))
            self._restoring = {}

    @property
    def fleet(self) -> LoadedFleet:
        return self._fleet.current()

    def units(self) -> list[UnitInfo]:
        """Every unit of the fleet, as the engine lists it now."""
        at = self.board.now()
        units = self._backend.list(reconcile.fleet_labels(self.fleet.name))
        self.board.record_all(units, at)
        self._actual.record(reported(units, self.fleet.config.agents), utcnow())
        return units

    def units_by_agent(self, agents: Collection[str] | None = None) -> dict[str, UnitInfo]:
        """Each agent's unit as the engine lists it now; of `agents` only, when given."""
        if agents is None:
            units = self.units()
        else:
            at = self.board.now()
            units = self._backend.list_agents(self.fleet.name, agents)
            self.board.record(agents, units, at)
            self._actual.record(reported(units, agents), utcnow())
        return {unit.agent: unit for unit in units}

    def known_units(self, asleep: Collection[str]) -> dict[str, UnitInfo]:
        """Each agent's unit as last listed, for reading the fleet: from the board while a
        supervisor keeps it, with only the agents it may not know asked of the engine (see
        `orchestrator.fleet.unit_board`); else listed now. `asleep`: the agents meant to sleep
        (asleep or stopped by the operator)."""
        now = self.board.now()
        self.board.note_read(now)
        if not self.board.trusted(now):
            return self.units_by_agent()
        doubtful = self.board.doubtful(self.fleet.config.agents, asleep)
        if doubtful:
            self.units_by_agent(doubtful)
        return self.board.units()

    def spec_for(self, agent: str) -> AgentSpec:
        """Mint the agent's token, prepare the operator's copy of its workspace, and describe
        its unit. Nothing is written where the agent can write."""
        paths = self._paths
        prepare_operator_copy(self.fleet, agent, paths)
        token_file = paths.token_file(agent)
        if not (self._backend.keeps_tokens and self._tokens.has(agent) and token_file.exists()):
            token_file = write_token(paths, agent, self._tokens.mint(agent))
        resources = self.fleet.config.resources_of(agent)
        return AgentSpec(
            fleet=self.fleet.name,
            agent=agent,
            image=self.image,
            data_dir=paths.agent_storage(agent),
            orchestrator_url=self.agent_url,
            config_hash=container_hash(self.fleet, agent),
            memory_bytes=resources.memory_bytes,
            cpus=resources.cpus,
            pids=resources.pids,
            token_file=token_file,
            disk_bytes=resources.disk_bytes,
            carry_from=self._carry.get(agent),
            carry_replaces=agent in self._restoring,
            placement=placement_of(paths, agent, self.fleet.config.placement_of(agent)),
            storage_name=storage_name_of(paths, agent),
        )

    def migrate_previous_layout(self) -> list[str]:
        """Once, for folders of the layout that shared /data with the host: remove the agent's
        old unit (it still has the folder mounted), then import its workspace files."""
        migrated = []
        for agent in self.fleet.config.agents:
            if not has_previous_layout(self._paths, agent):
                continue
            for unit in self.units():
                if unit.agent == agent:
                    self._remove(unit)
            imported = import_previous_layout(self._paths, agent)
            kept = previous_layout_folder(self._paths, agent)
            if kept is not None:
                self._carry[agent] = kept
            self._events.publish("storage.migrated", agent=agent, imported=imported)
            migrated.append(agent)
        return migrated

    def asleep(self) -> frozenset[str]:
        """The agents of the fleet whose desired state is asleep."""
        return self._desired.asleep().intersection(self.fleet.config.agents)

    def plan(self, candidate: LoadedFleet | None = None) -> list[reconcile.PlanAction]:
        """What applying `candidate` (by default the fleet in force) would do, field by field."""
        return self._plan(candidate, self.units())

    def _plan(self, candidate: LoadedFleet | None, units: list[UnitInfo]) -> list[reconcile.PlanAction]:
        target = candidate or self.fleet
        previous = self.fleet if candidate is not None else None
        endpoint = self.agent_url or None
        config = target.config
        always_on = frozenset(
            agent for agent in config.agents if config.always_on_of(agent) or not self._backend.runs_on_demand
        )
        held = (self.asleep() - always_on) | self._controls.stopped()
        # Those with work are woken by the scheduler's first pass, through the cap on awake agents.
        sleepers = frozenset(config.agents) - always_on
        return reconcile.plan(target, units, held, endpoint, previous, sleepers)

    def update_in_place(self, action: reconcile.PlanAction) -> None:
        """Bring an agent whose container stays in line with the fleet in force.

        Served config and orchestrator-side settings are already in force (the agent reloads on
        its next check-in); what is left are the files the orchestrator writes for it. Changed
        seeds (`effect == "seed"`) are named in the plan; writing them into a workspace that may
        have moved on since is the seeding's decision, not this one's.
        """
        if any(change.effect == "generated" for change in action.changes):
            names = refresh_generated(self.fleet, action.agent, self._paths)
            self._workspaces.push_files(self._workspaces.open(action.agent), names)

    @property
    def applying(self) -> bool:
        """An apply is under way (units are being made, started or removed)."""
        return self._applying.locked()

    @contextlib.contextmanager
    def unless_applying(self) -> Iterator[bool]:
        """Hold off applies while the caller acts on units; yields False (holding nothing) when an
        apply is under way, whose plan the caller would otherwise race."""
        free = self._applying.acquire(blocking=False)
        try:
            yield free
        finally:
            if free:
                self._applying.release()

    def apply(
        self,
        on_done: Callable[[reconcile.ApplyResult], None] = lambda _: None,
        candidate: LoadedFleet | None = None,
        force_seeds: frozenset[tuple[str, str]] = frozenset(),
    ) -> list[reconcile.ApplyResult]:
        """Apply `candidate` (or re-apply the fleet in force), then fleet.yaml's seeds (see
        `orchestrator.fleet.seeding`; `force_seeds` names (agent, file) pairs that take fleet.yaml's text
        over a changed file). Failures are results, never raised.

        One apply at a time: the first one at start-up and those asked over the API would
        otherwise plan against the same units.
        """
        with self._applying:
            try:
                results = self._apply(on_done, candidate)
            finally:
                self.board.forget_all()
            self.seeded = self._seed(force_seeds)
            return results

    def plan_seeds(
        self, candidate: LoadedFleet | None = None, force_seeds: frozenset[tuple[str, str]] = frozenset()
    ) -> list[SeedChange]:
        """What applying the seeds of `candidate` (default: the fleet in force) would do."""
        fleet = candidate or self.fleet
        changes = []
        for agent in fleet.config.agents:
            forced = frozenset(file for name, file in force_seeds if name == agent)
            try:
                changes += plan_seeds(fleet, agent, self._paths, forced)
            except OSError as unreadable:
                # The agent's folder could not be prepared (its failure is the apply's problem).
                log.warning("cannot compare %s's seeds with fleet.yaml: %s", agent, unreadable)
        return changes

    def _seed(self, force_seeds: frozenset[tuple[str, str]]) -> list[SeedChange]:
        """Write the seeds fleet.yaml changed where nobody changed the file since; the rest are
        conflicts, reported and published, never overwritten."""
        done = []
        for change in self.plan_seeds(None, force_seeds):
            if change.status == "same":
                with contextlib.suppress(OSError):
                    record_seed(self._paths, change.agent, change.file, change.text)
                continue
            if change.status == "write":
                try:
                    access = self._workspaces.open(change.agent)
                    self._workspaces.write_file(
                        access,
                        change.file,
                        change.text,
                        "seeded from fleet.yaml",
                        "fleet.yaml",
                        "fleet.yaml",
                    )
                except Refused as refused:
                    log.warning("seeding %s %s failed: %s", change.agent, change.file, refused)
                    continue
                record_seed(self._paths, change.agent, change.file, change.text)
            else:
                self._events.publish(
                    EventType.WORKSPACE_SEED_CONFLICT,
                    agent=change.agent,
                    file=change.file,
                    detail=str(change),
                )
            done.append(change)
        return done

    def _apply(
        self, on_done: Callable[[reconcile.ApplyResult], None], candidate: LoadedFleet | None
    ) -> list[reconcile.ApplyResult]:
        events = self._events
        try:
            units = self.units()
            actions = self._plan(candidate, units)
        except BackendError as exc:
            return self._plan_failed(f"cannot list the fleet's units: {exc}")
        except Exception as exc:
            # Last resort: a bug in planning must not take the orchestrator down with it (the
            # first apply runs before the server). Logged with its traceback, reported as a problem.
            log.exception("planning the fleet failed")
            return self._plan_failed(f"planning failed: {type(exc).__name__}: {exc} (a bug: see the log)")
        if candidate is not None:
            self._fleet.replace(candidate)
        self._note_sleep(actions)
        results = reconcile.apply(
            actions,
            self._backend,
            self.spec_for,
            on_done,
            update=self.update_in_place,
            lifecycle=self.lifecycle,
        )
        self._note_started(actions, results, {unit.agent for unit in units if unit.state == "running"})
        for result in results:
            if result.ok and result.action.kind == "update":
                events.publish(
                    EventType.AGENT_UPDATED,
                    agent=result.action.agent,
                    fields=[change.field for change in result.action.changes],
                )
            elif result.ok and result.action.kind in ("create", "recreate", "start"):
                self._carry.pop(result.action.agent, None)
                if result.action.kind != "start" and result.action.agent in self._restoring:
                    del self._restoring[result.action.agent]
                    restore_carried(self._paths, result.action.agent)
                kind = EventType.AGENT_STARTED if result.action.start else EventType.AGENT_CREATED
                events.publish(kind, agent=result.action.agent, reason=result.action.reason)
            elif result.ok and result.action.kind == "remove":
                events.publish(
                    EventType.AGENT_STOPPED, agent=result.action.agent, reason=result.action.reason
                )
        for result in results:
            if (
                result.ok
                and result.action.kind == "remove"
                and result.action.agent not in self.fleet.config.agents
            ):
                self._tokens.revoke(result.action.agent)
        self.problems = [f"{r.action.agent}: {r.error}" for r in results if not r.ok]
        events.publish(
            EventType.FLEET_APPLIED,
            changed=[str(r.action) for r in results if r.ok],
            failed=[f"{r.action.agent}: {r.error}" for r in results if not r.ok],
        )
        return results

    def _note_sleep(self, actions: list[reconcile.PlanAction]) -> None:
        """Agents whose unit is made and not started are asleep, before their unit is made: the
        supervisor must not take a stopped unit for a crash."""
        now = datetime.now(UTC)
        for action in actions:
            if not action.start:
                self._desired.set(action.agent, "asleep", now)

    def _note_started(
        self, actions: list[reconcile.PlanAction], results: list[reconcile.ApplyResult], running: set[str]
    ) -> None:
        """Agents whose unit this apply started are awake (an always-on agent that slept), and so
        are those found running while flagged asleep (an orchestrator stopped in the middle of
        their wake): the scheduler puts them back to sleep when idle."""
        now = datetime.now(UTC)
        awake = {a.agent for a in actions if a.kind in ("keep", "update") and a.agent in running}
        for result in results:
            if result.ok and result.action.start and result.action.kind in ("create", "recreate", "start"):
                awake.add(result.action.agent)
        for agent in awake & self.asleep():
            self._desired.set(agent, "awake", now)

    def _plan_failed(self, problem: str) -> list[reconcile.ApplyResult]:
        self.problems = [problem]
        self._events.publish(EventType.FLEET_APPLIED, changed=[], failed=self.problems)
        return []

    def apply_in_background(
        self, on_done: Callable[[reconcile.ApplyResult], None] = lambda _: None
    ) -> Future[list[reconcile.ApplyResult]]:
        """Start `apply` on a thread of its own; the future holds its results."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="apply")
        try:
            return executor.submit(self.apply, on_done)
        finally:
            executor.shutdown(wait=False)

    def _remove(self, unit: UnitInfo) -> None:
        self.lifecycle.transition(
            unit.agent,
            LifecycleEvent.REMOVE,
            policy=Policy.FLEET_MANAGER,
            unit_id=unit.id,
            current=state_of(unit),
        )

    def recreate(self, agent: str) -> UnitInfo:
        """Replace an agent's unit from scratch (it vanished, or it cannot be started again)."""
        for unit in self.units():
            if unit.agent == agent:
                self._remove(unit)
        try:
            made = self.lifecycle.transition(
                agent,
                LifecycleEvent.RUN,
                policy=Policy.FLEET_MANAGER,
                current=AgentState.ABSENT,  # every unit of the agent was just removed
                spec=self.spec_for(agent),
            )
        finally:
            self.board.forget(agent)
        assert made.unit is not None  # a run returns the unit it made
        return made.unit

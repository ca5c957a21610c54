"""Moving an agent to another node in one step, its state carried over its link.

Nothing is copied through an engine's filesystem, so the source and target may be any nodes:

1. the agent is held paused (it claims no inbox item meanwhile; messages wait in its inbox,
   which lives in the orchestrator) and its own files are fetched over its link, as a backup
   fetches them (memory.db through SQLite's backup API, history, learnings, processed items);
2. its unit is stopped (its old storage stays as it was);
3. the unit is made again on the target node with fresh storage under a new name, and, once the
   agent's link opens, it is handed the snapshot in checked chunks (orchestrator.backup.push),
   writes it into its storage itself and restarts in place; the move waits for it to answer;
4. the new node and storage are recorded, the old storage removed, the hold lifted.

If any step after 1 fails, the agent's unit is made again on the node it ran on with its old
storage, untouched, the fresh storage is removed, and the move fails naming the step. The
workspace needs no carrying: the operator's copy is handed to the agent when its link opens.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from dataclasses import replace
from pathlib import Path

from pydantic import BaseModel

from orchestrator.backends.base import AgentSpec, Backend, BackendError, StoragePlace, UnitInfo
from orchestrator.backup.fleet_backups import link_asker
from orchestrator.backup.push import answers_after_restart, push_snapshot
from orchestrator.backup.snapshot import SnapshotFailed, fetch_snapshot
from orchestrator.config.wrong_names import unknown_agent
from orchestrator.events import EventBus
from orchestrator.fleet.manager import FleetManager
from orchestrator.fleet.placement import node_constraint, record_placement
from orchestrator.lifecycle import (
    Controls,
    LifecycleEvent,
    Policy,
    TransitionRefused,
    state_of,
)
from orchestrator.running_agents.ask import AgentAsker
from orchestrator.running_agents.health import HealthBoard
from orchestrator.running_agents.requests import AgentLinks
from orchestrator.state.paths import StatePaths

AGENT_MOVED = "agent.moved"
AGENT_MOVE_FAILED = "agent.move_failed"
WAIT_FOR_APPLY_S = 60.0
RETRY_S = 0.2
ANSWER_WITHIN_S = 180.0
"""How long the agent has on its new node to open its link, restore and answer."""


class MoveResult(BaseModel):
    agent: str
    node: str
    from_node: str | None
    carried_bytes: int
    carried_files: int
    seconds: float
    old_storage: str
    done: str


class UnknownAgentToMove(LookupError):
    pass


class MoveFailed(BackendError):
    """The move failed; the agent runs where it ran, on its old storage (the message says so)."""


class AgentMove:
    def __init__(
        self,
        manager: FleetManager,
        backend: Backend,
        health: HealthBoard,
        events: EventBus,
        paths: StatePaths,
        controls: Controls,
        asker: AgentAsker,
        links: AgentLinks,
    ) -> None:
        self._manager = manager
        self._backend = backend
        self._lifecycle = manager.lifecycle
        self._health = health
        self._events = events
        self._paths = paths
        self._controls = controls
        self._ask = link_asker(asker)
        self._links = links

    async def move(self, agent: str, node: str, within_s: float = ANSWER_WITHIN_S) -> MoveResult:
        fleet = self._manager.fleet
        if agent not in fleet.config.agents:
            raise UnknownAgentToMove(unknown_agent(agent, fleet.name, fleet.config.agents))
        unit = f"flotilla-{fleet.name}-{agent}"
        await asyncio.to_thread(self._backend.check_move, unit, node)
        if self._controls.own_hold(agent) == "stopped":
            raise BackendError(f"{agent} is stopped: start it (`flotilla start {agent}`) to move it")
        deadline = time.monotonic() + WAIT_FOR_APPLY_S
        while True:
            # An apply or a supervisor pass holds the units for a moment: wait for it, then
            # hold them for the whole move, so neither makes the agent's unit again meanwhile.
            with self._manager.unless_applying() as free:
                if free:
                    return await self._paused_move(agent, unit, node, within_s)
            if time.monotonic() > deadline:
                raise BackendError("an apply is under way: move the agent once it is done")
            await asyncio.sleep(RETRY_S)

    async def _paused_move(self, agent: str, unit: str, node: str, within_s: float) -> MoveResult:
        paused_here = self._controls.own_hold(agent) is None
        if paused_here:
            self._controls.set(agent, "paused")
        snapshot = self._paths.root / "moves" / agent
        shutil.rmtree(snapshot, ignore_errors=True)
        snapshot.mkdir(mode=0o700, parents=True)
        try:
            return await self._held_move(agent, unit, node, snapshot, within_s)
        finally:
            shutil.rmtree(snapshot, ignore_errors=True)
            if paused_here:
                self._controls.set(agent, None)

    async def _held_move(
        self, agent: str, unit: str, node: str, snapshot: Path, within_s: float
    ) -> MoveResult:
        started = time.monotonic()
        try:
            listing = await fetch_snapshot(self._ask, agent, snapshot)
        except SnapshotFailed as failed:
            raise BackendError(
                f"moving {agent}: its snapshot could not be had, nothing changed: {failed}"
            ) from None
        old = await asyncio.to_thread(self._backend.storage_of, unit)
        fresh = StoragePlace(self._backend.fresh_storage_name(self._manager.fleet.name, agent), node)
        try:
            await asyncio.to_thread(self._stop, agent)
            spec = replace(
                self._manager.spec_for(agent), placement=(node_constraint(node),), storage_name=fresh.name
            )
            await asyncio.to_thread(self._relocate, agent, spec)
            self._health.forget(agent)
            applied = await self._restore_on_target(agent, snapshot, within_s)
        except (BackendError, SnapshotFailed, TransitionRefused) as failed:
            back = await self._move_back(agent, old, fresh)
            self._events.publish(AGENT_MOVE_FAILED, agent=agent, node=node, problem=str(failed))
            raise MoveFailed(f"moving {agent} to {node} failed: {failed}; {back}") from None
        record_placement(self._paths, agent, node, fresh.name)
        removed = await asyncio.to_thread(self._backend.remove_storage, old)
        seconds = round(time.monotonic() - started, 2)
        self._events.publish(
            AGENT_MOVED, agent=agent, node=node, carried_bytes=applied, seconds=seconds, old_storage=removed
        )
        return MoveResult(
            agent=agent,
            node=node,
            from_node=old.node,
            carried_bytes=applied,
            carried_files=len(listing.files),
            seconds=seconds,
            old_storage=removed,
            done=f"{agent} moved to {node} with its state ({len(listing.files)} files, {applied} bytes, "
            f"{seconds:g}s); {removed}",
        )

    def _unit_of(self, agent: str) -> UnitInfo | None:
        units = self._lifecycle.units(self._manager.fleet.name, agent)
        return units[0] if units else None

    def _stop(self, agent: str) -> None:
        """Stop the agent's unit where it is, whatever state the engine's listing gave (a listing
        can lag behind the engine): its storage then holds still."""
        unit = self._unit_of(agent)
        if unit is not None:
            self._lifecycle.transition(
                agent, LifecycleEvent.VACATE, policy=Policy.MOVE, unit_id=unit.id, current=state_of(unit)
            )

    def _relocate(self, agent: str, spec: AgentSpec) -> None:
        """Make the agent's unit again from `spec`, in place of whatever unit of its is there."""
        current = state_of(self._unit_of(agent))
        self._lifecycle.transition(
            agent, LifecycleEvent.RELOCATE, policy=Policy.MOVE, current=current, spec=spec
        )

    async def _restore_on_target(self, agent: str, snapshot: Path, within_s: float) -> int:
        deadline = time.monotonic() + within_s
        if not await self._links.wait_open(agent, within_s):
            raise BackendError(f"{agent} did not connect from its new node within {within_s:g}s")
        applied = await push_snapshot(self._ask, agent, snapshot)
        await answers_after_restart(self._ask, self._links, agent, max(deadline - time.monotonic(), 1.0))
        return applied.bytes

    async def _move_back(self, agent: str, old: StoragePlace, fresh: StoragePlace) -> str:
        """The agent's unit made again where it ran, on its old storage; what was done."""
        spec = self._manager.spec_for(agent)
        placement = (node_constraint(old.node),) if old.node else spec.placement
        spec = replace(spec, placement=placement, storage_name=old.name)
        try:
            await asyncio.to_thread(self._relocate, agent, spec)
        except (BackendError, TransitionRefused) as failed:
            return (
                f"it could not be started again on its old storage ({failed}): its storage "
                f"{old.name} is untouched on {old.node or 'its node'}; `flotilla apply` starts it there"
            )
        self._health.forget(agent)
        try:
            cleaned = await asyncio.to_thread(self._backend.remove_storage, fresh)
        except BackendError as failed:
            cleaned = f"the fresh volume {fresh.name} could not be removed: {failed}"
        return f"it runs on {old.node or 'its node'} again on its old storage {old.name} ({cleaned})"

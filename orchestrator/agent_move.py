"""Moving an agent to another node in one step: its placement recorded, its storage carried.

The agent's unit is stopped, its storage snapshotted into `.flotilla/moves/AGENT.tar`, and the
unit made again on the target node with the storage filled from the snapshot before it starts
(the runtime does the carrying: see Backend.move). The inbox stays in the orchestrator, so
messages sent meanwhile wait for the agent on its new node. The snapshot is removed once the
agent runs there; if the move fails it stays, and the error names it.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from pydantic import BaseModel

from orchestrator.backends.base import Backend, BackendError
from orchestrator.events import EventBus
from orchestrator.fleet_manager import FleetManager
from orchestrator.health import HealthBoard
from orchestrator.placement_overrides import node_constraint, record_placement
from orchestrator.state.paths import StatePaths

AGENT_MOVED = "agent.moved"
WAIT_FOR_APPLY_S = 60.0
RETRY_S = 0.2


class MoveResult(BaseModel):
    agent: str
    node: str
    carried_bytes: int
    done: str


class UnknownAgentToMove(LookupError):
    pass


class AgentMove:
    def __init__(
        self,
        manager: FleetManager,
        backend: Backend,
        health: HealthBoard,
        events: EventBus,
        paths: StatePaths,
    ) -> None:
        self._manager = manager
        self._backend = backend
        self._health = health
        self._events = events
        self._paths = paths

    def _move_held(self, fleet: str, agent: str, node: str, snapshot: Path) -> None:
        # Checked before the spec is made: making it gives the agent a new token.
        self._backend.check_move(f"flotilla-{fleet}-{agent}", node)
        spec = replace(self._manager.spec_for(agent), placement=(node_constraint(node),))
        try:
            self._backend.move(spec, node, snapshot)
        except BackendError as exc:
            kept = f"; its storage snapshot is kept in {snapshot}" if snapshot.exists() else ""
            raise BackendError(f"moving {agent} to {node} failed: {exc}{kept}") from exc
        record_placement(self._paths, agent, node)

    def move(self, agent: str, node: str) -> MoveResult:
        fleet = self._manager.fleet
        if agent not in fleet.config.agents:
            raise UnknownAgentToMove(
                f"no agent {agent!r} in fleet {fleet.name} ({', '.join(fleet.config.agents)})"
            )
        snapshot = self._paths.root / "moves" / f"{agent}.tar"
        snapshot.parent.mkdir(mode=0o700, exist_ok=True)
        deadline = time.monotonic() + WAIT_FOR_APPLY_S
        while True:
            # An apply or a supervisor pass holds the units for a moment: wait for it, then
            # hold them for the whole move, so neither makes the agent's unit again meanwhile.
            with self._manager.unless_applying() as free:
                if free:
                    self._move_held(fleet.name, agent, node, snapshot)
                    break
            if time.monotonic() > deadline:
                raise BackendError("an apply is under way: move the agent once it is done")
            time.sleep(RETRY_S)
        carried = snapshot.stat().st_size if snapshot.exists() else 0
        snapshot.unlink(missing_ok=True)
        self._health.forget(agent)
        self._events.publish(AGENT_MOVED, agent=agent, node=node, carried_bytes=carried)
        return MoveResult(
            agent=agent,
            node=node,
            carried_bytes=carried,
            done=f"{agent} moved to {node} with its storage ({carried} bytes carried)",
        )

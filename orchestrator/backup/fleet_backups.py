"""The running orchestrator's view of a backup: what the fleet holds and how each agent is asked
for its snapshot, built from the parts that know (the fleet in force, the state folder, the
agents' links)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_runtime.protocol import AgentOp
from orchestrator.backends.base import Backend, StoppedStorage
from orchestrator.backup.archive import FleetSources
from orchestrator.backup.schedule import ScheduledBackups
from orchestrator.backup.snapshot import AskAgent, Model, PartLimits, SnapshotFailed
from orchestrator.backup.stopped_agents import StoppedSnapshots
from orchestrator.errors import Refused
from orchestrator.fleet.manager import FleetManager
from orchestrator.fleet.view import FleetView
from orchestrator.lifecycle import Controls
from orchestrator.running_agents.ask import AgentAsker
from orchestrator.state.paths import StatePaths


def fleet_sources(fleet_view: FleetView, paths: StatePaths) -> FleetSources:
    fleet = fleet_view.current()
    config = fleet.config
    part_limits = {
        agent: PartLimits(
            max_bytes=config.resources_of(agent).disk_bytes,
            max_files=config.limits.backup_files,
            deadline_s=config.limits.backup_part_time_s,
        )
        for agent in config.agents
    }
    return FleetSources(
        fleet=fleet.name,
        fleet_file=fleet.path,
        paths=paths,
        agents=tuple(config.agents),
        part_limits=part_limits,
    )


def link_asker(asker: AgentAsker) -> AskAgent:
    """Snapshot requests over the agents' links; a refusal fails that agent's part only."""

    async def ask(agent: str, op: AgentOp, body: dict[str, Any], model: type[Model]) -> Model:
        try:
            return await asker.ask(agent, op, body, model)
        except Refused as failed:
            raise SnapshotFailed(f"agent {agent}: {failed.message}") from None

    return ask


def stopped_snapshots(
    manager: FleetManager, backend: Backend, paths: StatePaths, controls: Controls
) -> StoppedSnapshots:
    """Snapshots of agents that do not run, by the runtime, from the agent's image."""

    def storage_of(agent: str) -> StoppedStorage:
        return StoppedStorage(
            fleet=manager.fleet.name, agent=agent, image=manager.image, data_dir=paths.agent_storage(agent)
        )

    return StoppedSnapshots(backend, manager.units_by_agent, storage_of, controls.stopped)


def scheduled_backups(
    fleet_view: FleetView,
    paths: StatePaths,
    asker: AgentAsker,
    publish: Callable[..., Any],
    stopped: StoppedSnapshots | None = None,
) -> ScheduledBackups:
    """The orchestrator's own backups (fleet.yaml `backup:`), through the same path as the route."""
    return ScheduledBackups(
        lambda: fleet_view.current().config.backup,
        lambda: fleet_sources(fleet_view, paths),
        link_asker(asker),
        publish,
        stopped,
    )

"""Turns fleet.yaml into running units: specs, reconcile, re-creation and teardown."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from orchestrator import reconcile
from orchestrator.backends.base import AgentSpec, UnitInfo
from orchestrator.config.loader import LoadedFleet
from orchestrator.events import EventType
from orchestrator.image_name import DEFAULT_IMAGE
from orchestrator.scaffold import prepare_agent_dir
from orchestrator.scheduler.store import SchedulerStore

if TYPE_CHECKING:
    from orchestrator.services import Services


class FleetManager:
    def __init__(self, services: Services, image: str = DEFAULT_IMAGE) -> None:
        self._services = services
        self.image = image
        self.problems: list[str] = []
        """What the last apply could not do, for `ps`, the dashboard and `up -d`."""
        self._heartbeats = SchedulerStore(services.db)

    @property
    def fleet(self) -> LoadedFleet:
        return self._services.fleet

    def units(self) -> list[UnitInfo]:
        return self._services.backend.list(reconcile.fleet_labels(self.fleet.name))

    def units_by_agent(self) -> dict[str, UnitInfo]:
        return {unit.agent: unit for unit in self.units()}

    def spec_for(self, agent: str) -> AgentSpec:
        """Mint the agent's token, prepare its folder, and describe its unit."""
        services = self._services
        data_dir = services.paths.agent_dir(agent)
        token = services.tokens.mint(agent)
        prepare_agent_dir(self.fleet, agent, data_dir, token, chown=services.backend.name == "docker")
        resources = self.fleet.config.resources_of(agent)
        return AgentSpec(
            fleet=self.fleet.name,
            agent=agent,
            image=self.image,
            data_dir=data_dir,
            orchestrator_url=services.agent_url,
            config_hash=self.fleet.agent_hash(agent),
            memory_bytes=resources.memory_bytes,
            cpus=resources.cpus,
            pids=resources.pids,
            placement=self.fleet.config.placement_of(agent),
        )

    def hibernated(self) -> frozenset[str]:
        # Read from the scheduler's table, not through the scheduler: the first apply runs
        # before the scheduler exists (see orchestrator.cli.launch).
        return self._heartbeats.hibernated_agents().intersection(self.fleet.config.agents)

    def plan(self) -> list[reconcile.PlanAction]:
        return reconcile.plan(self.fleet, self.units(), self.hibernated(), self._services.agent_url or None)

    def apply(
        self, on_done: Callable[[reconcile.ApplyResult], None] = lambda _: None
    ) -> list[reconcile.ApplyResult]:
        actions = self.plan()
        results = reconcile.apply(actions, self._services.backend, self.spec_for, on_done)
        events = self._services.events
        for result in results:
            if result.ok and result.action.kind in ("create", "recreate", "start"):
                events.publish(
                    EventType.AGENT_STARTED, agent=result.action.agent, reason=result.action.reason
                )
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
                self._services.tokens.revoke(result.action.agent)
        self.problems = [f"{r.action.agent}: {r.error}" for r in results if not r.ok]
        events.publish(
            EventType.FLEET_APPLIED,
            changed=[str(r.action) for r in results if r.ok],
            failed=[f"{r.action.agent}: {r.error}" for r in results if not r.ok],
        )
        return results

    def apply_in_background(
        self, on_done: Callable[[reconcile.ApplyResult], None] = lambda _: None
    ) -> Future[list[reconcile.ApplyResult]]:
        """Start `apply` on a thread of its own; the future holds its results."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="apply")
        try:
            return executor.submit(self.apply, on_done)
        finally:
            executor.shutdown(wait=False)

    def recreate(self, agent: str) -> UnitInfo:
        """Replace an agent's unit from scratch (it vanished, or it cannot be started again)."""
        backend = self._services.backend
        for unit in self.units():
            if unit.agent == agent:
                backend.remove(unit.id)
        return backend.run(self.spec_for(agent))

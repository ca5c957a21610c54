"""The fleet as the operator sees it: each agent's state, health, spend and queue, and how many
agents are up and take messages. A view composed from the state of the running parts (units,
check-ins, inboxes, holds, spend), read by the fleet routes and by `flotilla up`'s live table."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, Field

from orchestrator.backends.base import UnitInfo
from orchestrator.services import Services


class AgentStatus(BaseModel):
    name: str
    role: str
    model: str
    state: str
    health: str
    restarts: int
    uptime_s: float | None
    memory_bytes: int | None
    spend_today_usd: float
    pending: int
    hibernated: bool
    held: str | None = Field(default=None, description="stopped or paused by the operator")
    unit_id: str | None
    node: str | None = None
    context_used: int | None = None
    context_window: int | None = None
    tokenizer: str | None = None
    memory_mode: str | None = None
    memory_problem: str | None = Field(
        default=None, description="memory.db was damaged at start and set aside"
    )
    embedding_model: str | None = Field(default=None, description="None: memory searches by keyword only")
    busy: bool = False
    dead_letters: int = Field(default=0, description="Inbox items set aside after too many deliveries")


class FleetReadiness(BaseModel):
    healthy: int = Field(description="Agents checking in (the first check-in comes before the runtime loads)")
    answering: int = Field(
        default=0, description="Agents whose runtime is loaded: they take a message from their inbox"
    )
    total: int = Field(description="Agents that should be running (hibernated ones are not counted)")
    problems: list[str] = Field(default_factory=list, description="What the last apply could not do")
    warnings: list[str] = Field(default_factory=list, description="Boundaries that are not enforced")

    @property
    def settled(self) -> bool:
        """Every agent takes messages, or something went wrong that waiting will not fix."""
        return self.answering >= self.total or bool(self.problems)


class FleetStatus(BaseModel):
    fleet: str
    runtime: str
    isolation: str
    agents: list[AgentStatus]
    warnings: list[str] = Field(default_factory=list, description="Boundaries that are not enforced")
    problems: list[str] = Field(default_factory=list, description="What the last apply could not do")


def _health(services: Services, agent: str, unit: UnitInfo | None) -> str:
    if unit is None or unit.state != "running":
        return "down"
    if unit.health == "unhealthy":
        return "unhealthy"
    if services.health.is_checking_in(agent):
        return "healthy"
    return "starting"


def agent_status(services: Services, agent: str, unit: UnitInfo | None, spent_today: float) -> AgentStatus:
    sighting = services.health.last(agent)
    checkin = sighting.checkin if sighting and unit and unit.state == "running" else None
    uptime = None
    if unit and unit.state == "running" and unit.started_at:
        uptime = (datetime.now(UTC) - unit.started_at).total_seconds()
    context = checkin.context if checkin else None
    return AgentStatus(
        name=agent,
        role=services.fleet.config.agents[agent].role,
        model=services.fleet.config.model_of(agent),
        state=unit.state if unit else "missing",
        health=_health(services, agent, unit),
        restarts=services.supervisor.restarts(agent),
        uptime_s=uptime,
        memory_bytes=checkin.rss_bytes if checkin else None,
        spend_today_usd=spent_today,
        pending=services.inbox.pending(agent),
        dead_letters=services.inbox.dead_count(agent),
        hibernated=services.scheduler.is_hibernated(agent),
        held=services.controls.hold_of(agent),
        unit_id=unit.id if unit else None,
        node=unit.node if unit else None,
        context_used=context.used_tokens if context else None,
        context_window=context.window if context else None,
        tokenizer=context.tokenizer if context else None,
        memory_mode=checkin.memory_mode if checkin else None,
        memory_problem=checkin.memory_problem if checkin else None,
        embedding_model=services.fleet.config.embedding_model(),
        busy=checkin.state == "busy" if checkin else False,
    )


def fleet_warnings(services: Services) -> list[str]:
    """What the operator must know is not enforced (an agent network without its firewall)."""
    return [services.backend.fence_warning] if services.backend.fence_warning else []


def fleet_status_of(services: Services) -> FleetStatus:
    units = services.manager.units_by_agent()
    spent = {costs.agent: costs.today_usd for costs in services.gateway.costs().agents}
    return FleetStatus(
        fleet=services.fleet.name,
        runtime=services.backend.name,
        isolation=services.backend.isolation,
        problems=services.manager.problems,
        warnings=fleet_warnings(services),
        agents=[
            agent_status(services, name, units.get(name), spent.get(name, 0.0))
            for name in services.fleet.config.agents
        ],
    )


# Check-in states sent once the runtime is loaded and the agent long-polls its inbox.
ANSWERING_STATES = frozenset({"idle", "busy"})


def _answering(services: Services, agent: str) -> bool:
    """Its runtime is loaded, or it is restarting in place after an idle release (it has worked
    before, its inbox waits, and it takes messages again within a second)."""
    sighting = services.health.last(agent)
    if sighting is None or not services.health.is_checking_in(agent):
        return False
    checkin = sighting.checkin
    return checkin.state in ANSWERING_STATES or (checkin.state == "starting" and checkin.turns > 0)


def fleet_readiness(services: Services) -> FleetReadiness:
    """From the agents' check-ins alone: no runtime call, cheap enough to ask every 20 ms."""
    hibernated = services.manager.hibernated() | services.controls.stopped()
    awake = [agent for agent in services.fleet.config.agents if agent not in hibernated]
    return FleetReadiness(
        healthy=sum(1 for agent in awake if services.health.is_checking_in(agent)),
        answering=sum(1 for agent in awake if _answering(services, agent)),
        total=len(awake),
        problems=list(services.manager.problems),
        warnings=fleet_warnings(services),
    )

"""The fleet as the operator sees it: each agent's state, health, spend and queue, and how many
agents are up and take messages. A view composed from the state of the running parts (units,
check-ins, inboxes, holds, spend), read by the fleet routes and by `flotilla up`'s live table."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import BaseModel, Field

from orchestrator.api.state_damage import state_problems
from orchestrator.backends.base import UnitInfo
from orchestrator.broker import queue_depths
from orchestrator.gateway.cooldown import ModelCooldown
from orchestrator.scheduler.admission import QueuedWake
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
    always_on: bool = Field(default=False, description="Started by `up` and never hibernated")
    wake_position: int | None = Field(
        default=None, description="Its place in the queue of agents with work waiting to be woken"
    )
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
    disk_full: bool = Field(
        default=False, description="Its /data is full: it answers but keeps no record of its work"
    )
    disk_free_bytes: int | None = Field(default=None, description="Free bytes on its /data, as it last said")
    busy: bool = False
    dead_letters: int = Field(default=0, description="Inbox items set aside after too many deliveries")
    fallback: list[str] = Field(
        default_factory=list, description="Models tried in order when the one it called fails"
    )


class FleetReadiness(BaseModel):
    healthy: int = Field(description="Agents checking in (the first check-in comes before the runtime loads)")
    answering: int = Field(
        default=0, description="Agents whose runtime is loaded: they take a message from their inbox"
    )
    total: int = Field(description="Agents that should be running (hibernated ones are not counted)")
    asleep: int = Field(default=0, description="Agents asleep until they have work")
    applying: bool = Field(
        default=False, description="fleet.yaml is being applied: units are still being made"
    )
    problems: list[str] = Field(default_factory=list, description="What the last apply could not do")
    warnings: list[str] = Field(default_factory=list, description="Boundaries that are not enforced")

    @property
    def settled(self) -> bool:
        """Every agent takes messages, or something went wrong that waiting will not fix."""
        return (self.answering >= self.total and not self.applying) or bool(self.problems)


class FleetStatus(BaseModel):
    fleet: str
    runtime: str
    isolation: str
    agents: list[AgentStatus]
    warnings: list[str] = Field(default_factory=list, description="Boundaries that are not enforced")
    problems: list[str] = Field(default_factory=list, description="What the last apply could not do")
    awake: int = Field(default=0, description="Agents whose unit runs")
    max_awake: int | None = Field(default=None, description="The cap on awake agents (null: none)")
    wake_queue: list[QueuedWake] = Field(
        default_factory=list, description="Agents with work waiting for a place among the awake, next first"
    )
    models_cooling: list[ModelCooldown] = Field(
        default_factory=list, description="Models the fallback chains skip for now, after failing"
    )


def asleep_in_fleet(services: Services) -> frozenset[str]:
    """The agents of the fleet in force whose desired state is asleep (the lifecycle's view)."""
    return services.desired.asleep().intersection(services.fleet.config.agents)


def _health(services: Services, agent: str, unit: UnitInfo | None, asleep: bool = False) -> str:
    if unit is not None and unit.state == "created" and not asleep:
        # Meant to run, the engine is starting it (a swarm task between pending and running), or
        # the listing predates the agent's first check-in: neither is a unit that is down. An
        # agent asleep keeps a unit made and never started.
        return "healthy" if services.health.is_checking_in(agent) else "starting"
    if unit is None or unit.state != "running":
        return "down"
    if unit.health == "unhealthy":
        return "unhealthy"
    if services.health.is_checking_in(agent):
        return "healthy"
    return "starting"


@dataclass(frozen=True)
class FleetFacts:
    """What the status of every agent needs, read once for the whole fleet: a handful of queries
    whatever the number of agents, where one agent's status alone would take several."""

    units: dict[str, UnitInfo]
    spent_today: dict[str, float]
    restarts: dict[str, int]
    depths: Counter[tuple[str, str]]
    asleep: frozenset[str]
    waiting: dict[str, int]

    @classmethod
    def read(cls, services: Services) -> FleetFacts:
        asleep = asleep_in_fleet(services)
        return cls(
            # As the supervisor last listed them: no engine call per view in the steady state.
            units=services.manager.known_units(asleep | services.controls.stopped()),
            spent_today=services.gateway.spent_today(),
            restarts=services.supervisor.all_restarts(),
            depths=queue_depths(services.db),
            asleep=asleep,
            waiting={queued.agent: queued.position for queued in services.scheduler.wake_queue()},
        )


def agent_status(services: Services, agent: str, facts: FleetFacts) -> AgentStatus:
    unit = facts.units.get(agent)
    sighting = services.health.last(agent)
    checkin = sighting.checkin if sighting and unit and unit.state == "running" else None
    uptime = None
    if unit and unit.state == "running" and unit.started_at:
        uptime = (datetime.now(UTC) - unit.started_at).total_seconds()
    context = checkin.context if checkin else None
    config = services.fleet.config
    return AgentStatus(
        name=agent,
        role=config.agents[agent].role,
        model=config.model_of(agent),
        state=unit.state if unit else "missing",
        health=_health(services, agent, unit, asleep=agent in facts.asleep),
        restarts=facts.restarts.get(agent, 0),
        uptime_s=uptime,
        memory_bytes=checkin.rss_bytes if checkin else None,
        spend_today_usd=facts.spent_today.get(agent, 0.0),
        pending=facts.depths[(agent, "queued")] + facts.depths[(agent, "claimed")],
        dead_letters=facts.depths[(agent, "dead")],
        hibernated=agent in facts.asleep,
        always_on=config.always_on_of(agent),
        wake_position=facts.waiting.get(agent),
        held=services.controls.hold_of(agent),
        unit_id=unit.id if unit else None,
        node=unit.node if unit else None,
        context_used=context.used_tokens if context else None,
        context_window=context.window if context else None,
        tokenizer=context.tokenizer if context else None,
        memory_mode=checkin.memory_mode if checkin else None,
        memory_problem=checkin.memory_problem if checkin else None,
        embedding_model=config.embedding_model(),
        disk_full=checkin.disk_full if checkin else False,
        disk_free_bytes=checkin.disk_free_bytes if checkin else None,
        busy=checkin.state == "busy" if checkin else False,
        fallback=config.fallback_of(agent),
    )


def fleet_warnings(services: Services) -> list[str]:
    """What the operator must know is not enforced (an agent network without its firewall)."""
    return [services.backend.fence_warning] if services.backend.fence_warning else []


def fleet_status_of(services: Services) -> FleetStatus:
    facts = FleetFacts.read(services)
    agents = [agent_status(services, name, facts) for name in services.fleet.config.agents]
    return FleetStatus(
        fleet=services.fleet.name,
        runtime=services.backend.name,
        isolation=services.backend.isolation,
        problems=services.manager.problems + state_problems(services),
        warnings=fleet_warnings(services),
        agents=agents,
        awake=sum(1 for agent in agents if agent.state == "running"),
        max_awake=services.fleet.config.max_awake,
        wake_queue=services.scheduler.wake_queue(),
        models_cooling=services.gateway.cooldowns.report(),
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
    asleep = asleep_in_fleet(services)
    held_down = asleep | services.controls.stopped()
    awake = [agent for agent in services.fleet.config.agents if agent not in held_down]
    return FleetReadiness(
        asleep=len(asleep),
        applying=services.manager.applying,
        healthy=sum(1 for agent in awake if services.health.is_checking_in(agent)),
        answering=sum(1 for agent in awake if _answering(services, agent)),
        total=len(awake),
        problems=list(services.manager.problems),
        warnings=fleet_warnings(services),
    )

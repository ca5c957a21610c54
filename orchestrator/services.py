"""The orchestrator's parts, wired once (see `orchestrator.wiring`) and shared by the HTTP app,
the supervisor and the scheduler. Subsystems take the Services object in their constructor and
read the parts they need from it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from orchestrator.agent_requests import AgentChannels
from orchestrator.auth import TokenStore
from orchestrator.config.fleet import LoadedFleet
from orchestrator.controls import Controls
from orchestrator.events import EventBus
from orchestrator.health import HealthBoard
from orchestrator.state.db import Database
from orchestrator.state.paths import StatePaths

if TYPE_CHECKING:
    from orchestrator.backends.base import Backend
    from orchestrator.broker.broker import Broker
    from orchestrator.broker.inbox import Inbox
    from orchestrator.fleet_manager import FleetManager
    from orchestrator.gateway.service import Gateway
    from orchestrator.scheduler.service import Scheduler
    from orchestrator.supervisor import Supervisor


@dataclass
class Services:
    fleet: LoadedFleet
    paths: StatePaths
    db: Database
    events: EventBus
    tokens: TokenStore
    backend: Backend
    controls: Controls = field(init=False)
    """The operator's holds on agents (stopped, paused), read from the database."""
    # Subsystems, attached by orchestrator.wiring.build_services (or by a test that needs them).
    inbox: Inbox = field(init=False)
    broker: Broker = field(init=False)
    gateway: Gateway = field(init=False)
    scheduler: Scheduler = field(init=False)
    supervisor: Supervisor = field(init=False)
    manager: FleetManager = field(init=False)
    health: HealthBoard = field(default_factory=HealthBoard)
    channels: AgentChannels = field(default_factory=AgentChannels)
    """The agents' open channels: how the orchestrator asks something of an agent."""
    operator_token: str = field(init=False, default="")
    agent_url: str = field(init=False, default="")
    """The orchestrator's address as agents dial it (the fleet network's gateway, or loopback)."""

    def __post_init__(self) -> None:
        self.controls = Controls(self.db)

"""The orchestrator's parts, built once by `orchestrator.wiring`, as the HTTP layer reads them.

A plain record: it builds nothing, and no part of the domain takes it (each part is given what
it uses when it is built).
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.backends.base import Backend
from orchestrator.broker import Broker, Inbox
from orchestrator.browser import BrowserSessions
from orchestrator.config.fleet import LoadedFleet
from orchestrator.control.auth import TokenStore
from orchestrator.conversations.router import Conversations
from orchestrator.conversations.slack import SlackEvents
from orchestrator.events import EventBus
from orchestrator.fair_share import FairShare, Retention
from orchestrator.fleet.manager import FleetManager
from orchestrator.fleet.view import FleetView
from orchestrator.gateway.service import Gateway
from orchestrator.hooks import HookReceiver
from orchestrator.lifecycle import Controls, DesiredStates
from orchestrator.notifications import Notifier
from orchestrator.running_agents.actions import OperatorActions
from orchestrator.running_agents.ask import AgentAsker
from orchestrator.running_agents.health import HealthBoard
from orchestrator.running_agents.requests import AgentLinks
from orchestrator.running_agents.snapshot import SnapshotTaker
from orchestrator.running_agents.supervisor import Supervisor
from orchestrator.scheduler.service import Scheduler
from orchestrator.state.db import Database
from orchestrator.state.paths import StatePaths
from orchestrator.workflows.engine import WorkflowEngine
from orchestrator.workspaces.access import WorkspaceAccess


@dataclass
class Services:
    fleet_view: FleetView
    paths: StatePaths
    db: Database
    events: EventBus
    tokens: TokenStore
    backend: Backend
    controls: Controls
    """The operator's holds on agents (stopped, paused), read from the database."""
    desired: DesiredStates
    """Each agent's desired state, awake or asleep, as the lifecycle keeps it."""
    health: HealthBoard
    agent_links: AgentLinks
    """The agents' open links: how the orchestrator asks something of an agent."""
    workspaces: WorkspaceAccess
    manager: FleetManager
    inbox: Inbox
    broker: Broker
    gateway: Gateway
    scheduler: Scheduler
    supervisor: Supervisor
    asker: AgentAsker
    snapshots: SnapshotTaker
    """The runtime snapshot (peers, budgets left, inbox depth, time) handed out with each item."""
    actions: OperatorActions
    notifier: Notifier
    """Notifications to the channels of fleet.yaml (the `notify` tool, heartbeat rules)."""
    hooks: HookReceiver
    """Signed requests from outside that become inbox items (POST /hooks/NAME)."""
    conversations: Conversations
    """People talking to agents through chat channels (pairing, routing, replies)."""
    slack: SlackEvents
    """Slack's Events API requests (POST /channels/slack/NAME/events)."""
    fair_share: FairShare
    """Each agent's rates and quotas on events, tells and asks."""
    retention: Retention
    """Retention of what the orchestrator stores for agents, applied while it runs."""
    workflows: WorkflowEngine
    """Runs of the workflows of fleet.yaml: started, followed, cancelled and retried."""
    operator_token: str
    """The operator's token in force (a rotation replaces it)."""
    agent_url: str
    """The orchestrator's address as agents dial it (the fleet network's gateway, or loopback;
    empty when no agent dials in)."""
    browsers: BrowserSessions | None = None
    """The agents' browser sessions (tools.browser); made at the first browser call."""

    @property
    def fleet(self) -> LoadedFleet:
        """The fleet in force."""
        return self.fleet_view.current()

"""Build the orchestrator's parts once, in dependency order: the composition root.

Each part is given exactly what it uses. `flotilla up` builds in two steps: what reconciling
needs (`core_services`, `fleet_manager`), so that the agents start at once, then the rest
(`attach_subsystems`) while they do.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.approvals import ApprovalStore
from orchestrator.backends.base import Backend
from orchestrator.config.fleet import LoadedFleet
from orchestrator.control.auth import TokenStore
from orchestrator.events import EventBus, EventType
from orchestrator.fleet.manager import FleetManager
from orchestrator.fleet.validation import register_fleet_checks
from orchestrator.fleet.view import FleetView
from orchestrator.images.names import DEFAULT_IMAGE
from orchestrator.lifecycle import ActualStates, Controls, DesiredStates, WorkArrivals
from orchestrator.running_agents.actions import load_operator_token, save_operator_token
from orchestrator.running_agents.health import HealthBoard
from orchestrator.running_agents.requests import AgentLinks
from orchestrator.state.check import check_state
from orchestrator.state.db import Database
from orchestrator.state.migrations import migrate_state
from orchestrator.state.paths import StatePaths
from orchestrator.workspaces.access import WorkspaceAccess

log = logging.getLogger(__name__)
# Config validates fleet.yaml with the checks the packages above it register.
register_fleet_checks()

if TYPE_CHECKING:
    from orchestrator.broker import Inbox
    from orchestrator.gateway.service import Gateway
    from orchestrator.running_agents.supervisor import SupervisorPolicy
    from orchestrator.scheduler.clock import Clock
    from orchestrator.scheduler.service import Scheduler
    from orchestrator.services import Services


@dataclass
class Core:
    """State, events, tokens and the fleet in force: what every other part is built from."""

    fleet_view: FleetView
    paths: StatePaths
    db: Database
    events: EventBus
    tokens: TokenStore
    backend: Backend
    controls: Controls
    health: HealthBoard
    agent_links: AgentLinks
    workspaces: WorkspaceAccess
    operator_token: str = ""

    @property
    def fleet(self) -> LoadedFleet:
        return self.fleet_view.current()


def core_services(fleet: LoadedFleet, backend: Backend, paths: StatePaths | None = None) -> Core:
    """Migrate state.db, then open it; the operator's token is the caller's (`adopt_operator_token`)."""
    paths = paths or StatePaths.for_fleet_file(fleet.path)
    paths.ensure()
    check_state(paths, Path.cwd())
    migrated = migrate_state(paths.db, paths.backups)
    db = Database(paths.db)
    events = EventBus(db)
    if migrated.applied:
        log.info("state.db migrated from version %d to %d", migrated.from_version, migrated.to_version)
        events.publish(
            EventType.STATE_MIGRATED,
            from_version=migrated.from_version,
            to_version=migrated.to_version,
            applied=list(migrated.applied),
            backup=str(migrated.backup),
        )
    fleet_view = FleetView(fleet)
    agent_links = AgentLinks()
    return Core(
        fleet_view=fleet_view,
        paths=paths,
        db=db,
        events=events,
        tokens=TokenStore(db),
        backend=backend,
        controls=Controls(db),
        health=HealthBoard(),
        agent_links=agent_links,
        workspaces=WorkspaceAccess(fleet_view, paths, events, agent_links),
    )


def adopt_operator_token(core: Core) -> None:
    """The saved operator token, or a new one saved: it survives restarts (scrape configs,
    bookmarks) until `flotilla token rotate`."""
    token = load_operator_token(core.paths, core.tokens)
    if token is None:
        token = core.tokens.mint_operator()
        save_operator_token(core.paths, token)
    core.operator_token = token


def fleet_manager(core: Core, image: str = DEFAULT_IMAGE) -> FleetManager:
    return FleetManager(
        core.fleet_view,
        core.paths,
        core.backend,
        core.tokens,
        core.controls,
        core.events,
        DesiredStates(core.db),
        ActualStates(core.db),
        core.workspaces,
        image,
    )


def reconciling_services(
    fleet: LoadedFleet, backend: Backend, paths: StatePaths | None = None, image: str = DEFAULT_IMAGE
) -> tuple[Core, FleetManager]:
    """What reconciling needs (state, tokens, the fleet manager): enough to start the agents."""
    core = core_services(fleet, backend, paths)
    adopt_operator_token(core)
    return core, fleet_manager(core, image)


def connect_work_arrivals(inbox: Inbox, scheduler: Scheduler) -> WorkArrivals:
    """An item put in an inbox is work arrived for its agent, told to the lifecycle; the
    scheduler's wake admission answers it (the scheduler's own items excepted)."""
    from orchestrator.scheduler.service import SCHEDULER_SENDER

    arrivals = WorkArrivals()
    inbox.on_put.append(arrivals.from_inbox)
    arrivals.answer_with(scheduler.on_work_arrived, except_from=SCHEDULER_SENDER)
    return arrivals


def attach_subsystems(
    core: Core,
    manager: FleetManager,
    policy: SupervisorPolicy | None = None,
    *,
    gateway: Gateway | None = None,
    clock: Clock | None = None,
) -> Services:
    """Inbox, gateway (unless given), broker, scheduler (on `clock`, by default the system's),
    supervisor, and the operator's actions.

    Imported here rather than at the top: they bring in most of the server's dependencies
    (about a second of imports), which `flotilla up` spends while the agents already start.
    """
    from orchestrator.alerts import AlertStore
    from orchestrator.broker import Broker, Inbox
    from orchestrator.config.limits import LimitsConfig
    from orchestrator.conversations import PeopleStore
    from orchestrator.conversations.router import Conversations
    from orchestrator.conversations.slack import SlackEvents
    from orchestrator.fair_share import FairShare, Retention
    from orchestrator.fair_share.masking import delivered_text_mask
    from orchestrator.fair_share.retention import RetentionTargets, inbox_target
    from orchestrator.gateway.service import Gateway
    from orchestrator.hooks import HookReceiver
    from orchestrator.hooks.store import HookStore
    from orchestrator.logging_setup import set_log_redaction
    from orchestrator.notifications import Notifier
    from orchestrator.running_agents.actions import OperatorActions
    from orchestrator.running_agents.ask import AgentAsker
    from orchestrator.running_agents.snapshot import SnapshotTaker
    from orchestrator.running_agents.supervisor import Supervisor
    from orchestrator.scheduler.service import Scheduler
    from orchestrator.services import Services
    from orchestrator.workflows.engine import WorkflowEngine

    fleet, db, events = core.fleet_view, core.db, core.events
    inbox = Inbox(db, events, core.controls, fleet)
    inbox.dead_letter_cause = core.health.disk_full_note
    inbox.mask = delivered_text_mask(fleet.secrets)
    fleet.watch_redaction(events.use_redaction)
    set_log_redaction(fleet.redaction)
    gateway = gateway or Gateway(db, fleet, core.controls, events)
    notifier = Notifier(fleet, db, events)
    scheduler = Scheduler(
        db,
        core.paths,
        fleet,
        inbox,
        core.controls,
        events,
        core.backend,
        budget=gateway,
        clock=clock,
        notifier=notifier,
    )
    fleet.watch_redaction(scheduler.runs.use_redaction)
    connect_work_arrivals(inbox, scheduler)
    broker = Broker(db, inbox, fleet, events, core.paths)
    # Who asks pays: a peer's item is worked on at the peer's expense, and refused once it can't pay.
    gateway.payer_of = inbox.payer_of_work
    broker.can_pay = gateway.budgets.own_budget_left
    conversations = Conversations(fleet, inbox, events, PeopleStore(db))

    def limits() -> LimitsConfig:
        return fleet.current().config.limits  # read at each use: an apply changes it

    retention = Retention(
        db,
        lambda: limits().retention,
        RetentionTargets(
            events,
            broker.messages,
            inbox_target(inbox),
            scheduler.runs,
            gateway.ledger,
            AlertStore(db),
            ApprovalStore(db, events),
        ),
        now=scheduler.clock.now,
    )
    return Services(
        fleet_view=fleet,
        paths=core.paths,
        db=db,
        events=events,
        tokens=core.tokens,
        backend=core.backend,
        controls=core.controls,
        desired=DesiredStates(db),
        health=core.health,
        agent_links=core.agent_links,
        workspaces=core.workspaces,
        manager=manager,
        inbox=inbox,
        broker=broker,
        gateway=gateway,
        scheduler=scheduler,
        supervisor=Supervisor(db, fleet, manager, core.backend, core.controls, core.health, events, policy),
        asker=AgentAsker(fleet, core.agent_links, core.health, scheduler),
        snapshots=SnapshotTaker(
            fleet.current, core.health, inbox, gateway.budgets, lambda: datetime.now(UTC)
        ),
        actions=OperatorActions(fleet, manager, core.controls, core.health, inbox, events),
        notifier=notifier,
        hooks=HookReceiver(fleet, inbox, events, HookStore(db)),
        conversations=conversations,
        slack=SlackEvents(fleet, conversations.handle),
        operator_token=core.operator_token,
        agent_url=manager.agent_url,
        fair_share=FairShare(lambda: limits().rates, events, inbox.pending_from),
        retention=retention,
        workflows=WorkflowEngine(db, fleet, inbox, ApprovalStore(db, events), events),
    )


def build_services(
    fleet: LoadedFleet,
    backend: Backend,
    paths: StatePaths | None = None,
    image: str = DEFAULT_IMAGE,
    policy: SupervisorPolicy | None = None,
) -> Services:
    core, manager = reconciling_services(fleet, backend, paths, image)
    return attach_subsystems(core, manager, policy)

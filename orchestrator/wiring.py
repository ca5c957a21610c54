"""Build the orchestrator's parts once, in dependency order."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from orchestrator.auth import TokenStore
from orchestrator.backends.base import Backend
from orchestrator.config.fleet import LoadedFleet
from orchestrator.events import EventBus, EventType
from orchestrator.fleet_manager import FleetManager
from orchestrator.image_name import DEFAULT_IMAGE
from orchestrator.operator_actions import load_operator_token, save_operator_token
from orchestrator.services import Services
from orchestrator.state.db import Database
from orchestrator.state.migrations import migrate_state
from orchestrator.state.paths import StatePaths

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from orchestrator.supervisor import SupervisorPolicy


def core_services(fleet: LoadedFleet, backend: Backend, paths: StatePaths | None = None) -> Services:
    """State, events and tokens only; subsystems are attached by the caller (or by build_services)."""
    paths = paths or StatePaths.for_fleet_file(fleet.path)
    paths.ensure()
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
    return Services(
        fleet=fleet,
        paths=paths,
        db=db,
        events=events,
        tokens=TokenStore(db),
        backend=backend,
    )


def reconciling_services(
    fleet: LoadedFleet, backend: Backend, paths: StatePaths | None = None, image: str = DEFAULT_IMAGE
) -> Services:
    """What reconciling needs (state, tokens, the fleet manager): enough to start the agents."""
    services = core_services(fleet, backend, paths)
    # The operator's token survives restarts (scrape configs, bookmarks); `flotilla token rotate`.
    if not load_operator_token(services):
        services.operator_token = services.tokens.mint_operator()
        save_operator_token(services)
    services.manager = FleetManager(services, image)
    return services


def attach_subsystems(services: Services, policy: SupervisorPolicy | None = None) -> None:
    """Inbox, gateway, broker, scheduler and supervisor.

    Imported here rather than at the top: they bring in most of the server's dependencies
    (about a second of imports), which `flotilla up` spends while the agents already start.
    """
    from orchestrator.broker.broker import Broker
    from orchestrator.broker.inbox import Inbox
    from orchestrator.gateway.service import Gateway
    from orchestrator.scheduler.service import Scheduler
    from orchestrator.supervisor import Supervisor

    services.inbox = Inbox(services)
    services.gateway = Gateway(services)
    services.broker = Broker(services)
    services.scheduler = Scheduler(services)
    services.supervisor = Supervisor(services, policy)


def build_services(
    fleet: LoadedFleet,
    backend: Backend,
    paths: StatePaths | None = None,
    image: str = DEFAULT_IMAGE,
    policy: SupervisorPolicy | None = None,
) -> Services:
    services = reconciling_services(fleet, backend, paths, image)
    attach_subsystems(services, policy)
    return services

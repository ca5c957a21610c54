"""The real parts an inbox module stands on (state.db, events, holds, the fleet), without the rest
of the orchestrator: the unit tests of each inbox module build only what it needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from broker_helpers import write_fleet

from agent_runtime.protocol import InboxItem, WorkResult
from orchestrator.broker.queue import DurableQueue
from orchestrator.broker.views import InboxViews
from orchestrator.broker.wakeups import Arrivals, ServingLoop
from orchestrator.config.loader import load_fleet
from orchestrator.events import EventBus
from orchestrator.fleet.view import FleetView
from orchestrator.lifecycle import Controls
from orchestrator.state.db import Database


@dataclass
class QueueParts:
    db: Database
    events: EventBus
    controls: Controls
    views: InboxViews
    serving: ServingLoop
    arrivals: Arrivals
    queue: DurableQueue
    finished: list[tuple[str, WorkResult]] = field(default_factory=list)
    arrived: list[tuple[str, InboxItem]] = field(default_factory=list)


def queue_parts(root: Path, fleet_extra: str = "") -> QueueParts:
    fleet_file = write_fleet(root / "fleet")
    if fleet_extra:
        fleet_file.write_text(fleet_file.read_text() + fleet_extra)
    db = Database(root / "state.db")
    events = EventBus(db)
    controls = Controls(db)
    views = InboxViews(db)
    serving = ServingLoop()
    arrivals = Arrivals(serving)
    finished: list[tuple[str, WorkResult]] = []
    queue = DurableQueue(
        db,
        events,
        controls,
        FleetView(load_fleet(fleet_file)),
        views=views,
        arrivals=arrivals,
        finished=lambda item_id, result: finished.append((item_id, result)),
    )
    parts = QueueParts(db, events, controls, views, serving, arrivals, queue, finished)
    queue.on_put.append(lambda agent, item: parts.arrived.append((agent, item)))
    return parts

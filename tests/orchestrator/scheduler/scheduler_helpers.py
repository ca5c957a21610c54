"""Shared pieces of the scheduler tests: fleet files, wiring, a simulated agent, a fake budget."""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agent_runtime.protocol import InboxItem, ItemKind, RunOutcome, RunRecord, WorkResult
from agent_runtime.workspace.versioned import scaffold
from orchestrator.backends.base import Backend
from orchestrator.broker import Inbox
from orchestrator.config.fleet import LoadedFleet
from orchestrator.config.loader import load_fleet
from orchestrator.control.auth import TokenStore
from orchestrator.events import EventBus
from orchestrator.fleet.view import FleetView
from orchestrator.gateway.service import Gateway
from orchestrator.lifecycle import Controls
from orchestrator.scheduler.clock import Clock, ManualClock
from orchestrator.scheduler.service import Scheduler
from orchestrator.services import Services
from orchestrator.state.db import Database
from orchestrator.state.paths import StatePaths
from orchestrator.testing.fake_backend import FakeBackend, fake_spec
from orchestrator.wiring import attach_subsystems, connect_work_arrivals, core_services, fleet_manager

# A Monday, so weekday rules and cron schedules have a known calendar.
START = datetime(2025, 1, 6, 0, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def fleet_yaml(heartbeat: str, extra: str = "", agent: str = "worker") -> str:
    """A one-agent fleet; `heartbeat` and `extra` are YAML lines for the agent (2-space indent)."""
    body = textwrap.indent(textwrap.dedent(heartbeat).strip(), "    ")
    more = textwrap.indent(textwrap.dedent(extra).strip(), "    ") if extra.strip() else ""
    return f"version: 1\nfleet: hbtest\nagents:\n  {agent}:\n    role: tests heartbeats\n{body}\n{more}\n"


def write_fleet(root: Path, text: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "fleet.yaml"
    path.write_text(text)
    return path


@dataclass
class SchedulerParts:
    """What the scheduler tests build a scheduler from: real state, a real inbox, a fake backend."""

    fleet_view: FleetView
    paths: StatePaths
    db: Database
    events: EventBus
    tokens: TokenStore
    backend: Backend
    controls: Controls
    inbox: Inbox
    operator_token: str
    gateway: Gateway | None = None
    scheduler: Scheduler | None = None

    @property
    def fleet(self) -> LoadedFleet:
        return self.fleet_view.current()


def build_services(fleet_file: Path) -> SchedulerParts:
    core = core_services(load_fleet(fleet_file), FakeBackend())
    return SchedulerParts(
        fleet_view=core.fleet_view,
        paths=core.paths,
        db=core.db,
        events=core.events,
        tokens=core.tokens,
        backend=core.backend,
        controls=core.controls,
        inbox=Inbox(core.db, core.events, core.controls, core.fleet_view),
        operator_token=core.tokens.mint_operator(),
    )


def build_all_services(fleet_file: Path, clock: Clock, backend: FakeBackend | None = None) -> Services:
    """Every part, as the orchestrator wires them, with the scheduler on `clock`."""
    core = core_services(load_fleet(fleet_file), backend or FakeBackend())
    core.operator_token = core.tokens.mint_operator()
    return attach_subsystems(core, fleet_manager(core), clock=clock)


def scheduler_of(
    services: SchedulerParts | Services, cls: type[Scheduler] = Scheduler, **options: Any
) -> Scheduler:
    """A scheduler over the test's state (`options`: clock, max_sleep_s, budget), told of the
    work that arrives in the test's inboxes as the orchestrator's is."""
    scheduler = cls(
        services.db,
        services.paths,
        services.fleet_view,
        services.inbox,
        services.controls,
        services.events,
        services.backend,
        **options,
    )
    connect_work_arrivals(services.inbox, scheduler)
    return scheduler


def scaffold_agent(services: Services, agent: str, heartbeat_md: str | None = None) -> None:
    """Create the agent's workspace as the orchestrator does on first start."""
    seeds = {"HEARTBEAT.md": heartbeat_md} if heartbeat_md is not None else {}
    scaffold(services.paths.agent_dir(agent), seeds, {"SYSTEM.md": "system policy\n"})


def start_unit(services: Services, agent: str) -> str:
    backend = services.backend
    assert isinstance(backend, FakeBackend)
    unit = backend.create(fake_spec(services.fleet.name, agent, str(services.paths.agent_dir(agent))))
    backend.start(unit.id)
    return unit.id


class DrivingClock(ManualClock):
    """A manual clock that lets simulated agents work before each jump in time."""

    def __init__(self, start: datetime = START) -> None:
        super().__init__(start)
        self.before_sleep: list[Callable[[], Awaitable[None]]] = []

    async def sleep(self, seconds: float) -> None:
        for work in self.before_sleep:
            await work()
        await super().sleep(seconds)


class SimulatedAgent:
    """Claims and completes its inbox items at once, posting a turn record for each."""

    def __init__(self, services: Services, scheduler: Scheduler, agent: str) -> None:
        self.services = services
        self.scheduler = scheduler
        self.agent = agent
        self.handled: list[InboxItem] = []
        self.fail_next = False

    async def work(self) -> None:
        inbox = self.services.inbox
        while (item := await inbox.next(self.agent, 0)) is not None:
            now = datetime.now(UTC)
            ok = not self.fail_next
            self.fail_next = False
            inbox.complete(self.agent, item.id, WorkResult(ok=ok, error=None if ok else "tool crashed"))
            trigger = "heartbeat" if item.kind == ItemKind.HEARTBEAT else "operator"
            self.scheduler.record_turn(
                RunRecord(
                    id=uuid.uuid4().hex,
                    agent=self.agent,
                    trigger=trigger,
                    item_id=item.id,
                    model="test",
                    started_at=now,
                    finished_at=now,
                    tokens_in=100,
                    tokens_out=20,
                    outcome=RunOutcome.OK if ok else RunOutcome.ERROR,
                )
            )
            self.handled.append(item)


class FakeBudget:
    """Budgets that stop the whole fleet until a given time (the start of the next budget window)."""

    def __init__(self, exhausted_until: datetime) -> None:
        self.exhausted_until = exhausted_until

    def watch_stops(self, use: Callable[[str | None, datetime | None], None]) -> None:
        use(None, self.exhausted_until)


def heartbeat_items(services: Services, agent: str) -> list[InboxItem]:
    return [
        item
        for item in services.inbox.list(agent, limit=10_000, include_done=True)
        if item.kind == ItemKind.HEARTBEAT
    ]


def ticks(scheduler: Scheduler, agent: str) -> list[tuple[str, str]]:
    """(outcome, detail) of every tick record, oldest first."""
    views = scheduler.runs.recent(agent, limit=100_000, kind="tick")
    return [(view.outcome, view.detail) for view in reversed(views)]

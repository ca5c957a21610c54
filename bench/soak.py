"""A simulated month of a fleet on a virtual clock, in minutes of real time.

    python -m bench.soak --days 30      # the month (a few minutes)
    python -m bench.soak --days 7       # the week CI runs (tests/bench/test_soak.py)

What runs for real: the orchestrator's scheduler (heartbeats every minute, pre-checks,
hibernation after 30 idle minutes, waking for memory jobs), its inbox, run records and events in
state.db, on a `ManualClock`; and, for each agent, its own storage with the runtime's memory
code: the memory store, the maintenance jobs and (for the `checkpoint` agent) the checkpoint
strategy's jobs on the same virtual clock, the turn log, the fact log, forgets through every
path's eraser. What is simulated: the agents' processes. Containers and the agent loop run on
the wall clock and cannot be driven by a virtual one, so each agent here is its storage and its
jobs in this process; a message's exchange (the message, two tool calls and the answer, from
the built-in `test` model's point of view) is written as the worker would write it, and its
prompt is estimated from what the worker would send (memory files, working memory, replay), at
4 characters a token. An agent checks once a virtual minute, while awake, when its memory jobs
are due (as an idle agent does), and reports that time so the scheduler wakes it from
hibernation for them.

Printed: jobs that ran on their slot / due (goal 100 %), storage per agent and state.db at day
1/7/N, the process's RSS at day 1/N (the orchestrator's parts and the simulated agents share it),
prompt tokens per model call at day 1/N (counted as the runtime estimates without a tokenizer), forgotten texts found in any file (goal 0), model calls
made by idle heartbeat ticks (goal 0). The exit status is 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agent_runtime.cognition.context import CheckpointContext
from agent_runtime.cognition.runner import CognitionRunner
from agent_runtime.jobs_due import jobs_due
from agent_runtime.memory import (
    DeterministicEmbedder,
    FactLog,
    MaintenanceRunner,
    MemoryConfig,
    MemoryStore,
    MemoryTools,
    scrub_forgotten,
)
from agent_runtime.protocol import (
    AgentRuntimeConfig,
    ContextSettings,
    ItemKind,
    RunOutcome,
    RunRecord,
    WorkResult,
)
from agent_runtime.work.context import ContextManager
from agent_runtime.work.erasure import Eraser
from agent_runtime.work.facts import MemoryFileFacts
from agent_runtime.work.prompt import build_static_blocks
from agent_runtime.work.tokens import EstimateCounter
from agent_runtime.workspace.history import HistoryLog, Turn
from agent_runtime.workspace.learnings import Learnings
from agent_runtime.workspace.versioned import Workspace, scaffold
from orchestrator.config.loader import load_fleet
from orchestrator.memory_access.forgetting import forget_in_state, forget_in_workspace_versions
from orchestrator.scheduler.clock import ManualClock
from orchestrator.scheduler.service import Scheduler
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend, fake_spec
from orchestrator.wiring import attach_subsystems, core_services, fleet_manager

START = datetime(2026, 1, 5, 0, 0, tzinfo=UTC)
MIB = 1024 * 1024
DIMS = 64
AGENTS = {"researcher": "compact", "writer": "compact", "checkpoint": "checkpoint"}
FLEET = """version: 1
fleet: soak
llm:
  embedding: {model: test, dimensions: 64}
agents:
""" + "".join(
    f"  {name}:\n    role: soak {name}\n    heartbeat: {{every: 1m}}\n    hibernate_after: 30m\n"
    + (f"    context: {{strategy: {strategy}}}\n" if strategy == "checkpoint" else "")
    for name, strategy in AGENTS.items()
)
# Goals: the bound each agent's storage and state.db must stay under at the end.
AGENT_STORAGE_BOUND_MIB = 64.0
STATE_DB_BOUND_MIB = 256.0
RSS_GROWTH_BOUND_MIB = 64.0
ON_SLOT_TOLERANCE = timedelta(minutes=2)
TOOL_OUTPUT = "result line of a tool call\n" * 120
WINDOW = 32_000


class TestSummarizer:
    """The `test` model's part in compaction: a fixed summary, no durable fact to flush."""

    def complete(self, system: str, user: str) -> str:
        return "Earlier: the operator sent messages and the agent answered them."


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class SimAgent:
    name: str
    data: Path
    settings: ContextSettings
    clock: ManualClock
    store: MemoryStore = field(init=False)
    maintenance: MaintenanceRunner = field(init=False)
    cognition: CognitionRunner | None = field(init=False)
    saved: dict[int, str] = field(default_factory=dict)
    forgotten: list[str] = field(default_factory=list)
    prompt_tokens: list[tuple[int, int]] = field(default_factory=list)
    config: AgentRuntimeConfig = field(init=False)
    next_due: datetime | None = None

    def __post_init__(self) -> None:
        self.start()

    def start(self) -> None:
        """A (re)start: the store and the runners opened afresh on the same storage."""
        now = self.clock.now
        self.store = MemoryStore(
            self.data / "memory.db",
            embedder=DeterministicEmbedder(DIMS),
            config=MemoryConfig(dimensions=DIMS, embedding_model="test"),
            fact_log=FactLog(self.data / "workspace", clock=now),
            clock=now,
        )
        self.maintenance = MaintenanceRunner(self.store, self.data, clock=now)
        checkpoint = self.settings.strategy == "checkpoint"
        self.cognition = (
            CognitionRunner(self.data, self.settings, agent_model="test", clock=now) if checkpoint else None
        )
        self.config = AgentRuntimeConfig.model_validate(
            {
                "fleet": "soak",
                "agent": self.name,
                "role": "soak",
                "model": "test",
                "context_window": WINDOW,
                "config_hash": "soak",
                "context": self.settings.model_dump(),
            }
        )
        base: dict[str, Any] = {
            "window": WINDOW,
            "thresholds": self.config.thresholds,
            "counter": EstimateCounter(),
            "completer": TestSummarizer(),
            "memory_file": MemoryFileFacts(Workspace(self.data)),
            "store": None,
            "history_log": HistoryLog(self.data),
            "state_path": self.data / ".runtime" / "context.json",
        }
        if checkpoint:
            assert self.cognition is not None
            self.context: ContextManager = CheckpointContext(
                files=self.cognition.files, settings=self.settings, **base
            )
        else:
            self.context = ContextManager(**base)
        self.context.load()

    def restart(self) -> None:
        self.store.close()
        self.start()

    def run_due_jobs(self, report: Report) -> None:
        now = self.clock.now()
        for due in jobs_due(self.data, self.settings, now):
            if due.next_due > now:
                continue
            report.due += 1
            if due.family == "maintenance":
                record = self.maintenance.run_now(due.job, "schedule")
                started = record.started_at
            else:
                assert self.cognition is not None
                started = self.cognition.run(due.job, "schedule").started_at
            report.on_slot += started - due.next_due <= ON_SLOT_TOLERANCE

    def exchange(self, text: str, day: int) -> str:
        """One message worked as the worker's loop works it, through the agent's real context
        manager (its strategy, its thresholds, its files): the message, two rounds of a tool
        call with its output, the answer. The prompt of each model call is measured."""
        context = self.context
        at = self.clock.now().isoformat(timespec="milliseconds").replace("+00:00", "Z")
        header = f"[{self.clock.now():%Y-%m-%d %H:%M:%S} UTC · message from operator]"
        runtime = "[runtime: peers idle · 39,500 tokens left of your daily budget · 0 other items waiting]"
        static = build_static_blocks(self.config, Workspace(self.data), Learnings(self.data / "workspace"))
        context.begin_item()
        context.add(Turn(role="user", content=f"{header}\n{text}\n{runtime}", at=at))
        for n in range(2):
            self.prompt_tokens.append((day, context.prepare(static).tokens))
            call = {"id": f"c{n}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
            context.add(Turn(role="assistant", content="", tool_calls=(call,), at=at))
            context.add(Turn(role="tool", content=TOOL_OUTPUT, tool_call_id=f"c{n}", name="read_file", at=at))
        self.prompt_tokens.append((day, context.prepare(static).tokens))
        answer = f"Done: {text[:60]}"
        context.add(Turn(role="assistant", content=answer, at=at))
        context.end_item()
        if "code" in text:
            saved = MemoryTools(self.store).memory_save(text, category="personal", source="user_stated")
            if saved["id"] is not None:
                self.saved[int(saved["id"])] = text
        return answer

    def forget_one(self, services: Services, rng: random.Random) -> None:
        """The operator forgets a fact: the agent's copies, then the orchestrator's."""
        live = [fact_id for fact_id in self.saved if self.store.get(fact_id) is not None]
        live = [i for i in live if (f := self.store.get(i)) is not None and f.status.value == "active"]
        if not live:
            return
        fact_id = rng.choice(live)
        texts: list[str] = []
        # The store says what each forget erased (the fact, its versions, its restatements).
        self.store.forget_listeners.append(texts.extend)
        result = self.store.forget_all(fact_id, "forgotten by the operator", with_restatements=True)
        self.store.forget_listeners.remove(texts.extend)
        # As the running worker does: what it holds for the prompt, then every file.
        self.context.rewrite_texts(lambda text: scrub_forgotten(text, texts))
        Eraser(self.data).erase(texts)
        owners = (services.inbox, services.scheduler.runs, services.events)
        forget_in_state(owners, self.name, texts)
        forget_in_workspace_versions(Workspace(services.paths.agent_dir(self.name)), texts)
        services.db.truncate_wal()
        self.forgotten += [self.saved.pop(i) for i in result.forgotten if i in self.saved]


@dataclass
class Report:
    due: int = 0
    on_slot: int = 0
    idle_model_calls: int = 0
    work_ticks: int = 0
    forgotten: int = 0
    forgotten_found: int = 0
    storage: dict[int, dict[str, float]] = field(default_factory=dict)
    state_db: dict[int, float] = field(default_factory=dict)
    rss: dict[int, float] = field(default_factory=dict)


def build(root: Path, clock: ManualClock) -> Services:
    fleet_file = root / "fleet.yaml"
    fleet_file.write_text(FLEET)
    core = core_services(load_fleet(fleet_file), FakeBackend())
    core.operator_token = core.tokens.mint_operator()
    services = attach_subsystems(core, fleet_manager(core), clock=clock)
    backend = services.backend
    assert isinstance(backend, FakeBackend)
    for name in AGENTS:
        scaffold(services.paths.agent_dir(name), {}, {"SYSTEM.md": "Fleet policy.\n"})
        unit = backend.create(fake_spec("soak", name, str(services.paths.agent_dir(name))))
        backend.start(unit.id)
    return services


def deliver(
    services: Services, agent: SimAgent, scheduler: Scheduler, day: int, rng: random.Random, report: Report
) -> None:
    """The agent claims and answers what waits for it (a message wakes it from hibernation)."""
    while (item := asyncio.run(services.inbox.next(agent.name, 0))) is not None:
        if item.kind == ItemKind.HEARTBEAT:
            # A tick the pre-checks found work for: one model call, with its reasons.
            report.work_ticks += 1
            report.idle_model_calls += not item.reasons
            services.inbox.complete(agent.name, item.id, WorkResult(ok=True, text="HEARTBEAT_OK"))
            continue
        answer = agent.exchange(item.text, day)
        services.inbox.complete(agent.name, item.id, WorkResult(ok=True, text=answer))
        now = agent.clock.now()
        scheduler.record_turn(
            RunRecord(
                id=uuid.uuid4().hex,
                agent=agent.name,
                trigger="operator",
                item_id=item.id,
                model="test",
                started_at=now,
                finished_at=now,
                tokens_in=agent.prompt_tokens[-1][1],
                tokens_out=20,
                outcome=RunOutcome.OK,
            )
        )


def simulate(days: int, root: Path, seed: int = 7) -> Report:
    rng = random.Random(seed)
    clock = ManualClock(START)
    services = build(root, clock)
    scheduler = services.scheduler
    agents = {
        name: SimAgent(
            name,
            services.paths.agent_storage(name),
            ContextSettings.model_validate({"strategy": strategy}),
            clock,
        )
        for name, strategy in AGENTS.items()
    }
    report = Report()
    for agent in agents.values():
        agent.data.mkdir(parents=True, exist_ok=True)
    pending: set[str] = set()
    # Each code said once: a person saying a forgotten fact again would bring it back, rightly.
    codes = iter(rng.sample(range(1000, 10000), 9000))
    for minute in range(days * 24 * 60):
        now = START + timedelta(minutes=minute)
        clock.set(now)
        day = minute // (24 * 60) + 1
        pending |= {result.agent for result in scheduler.run_due(now) if result.item_id}
        if minute % 60 == 0:
            services.retention.apply()  # the orchestrator's retention task, on the virtual clock
        for agent in agents.values():
            if 8 <= now.hour < 20 and minute % 90 == rng.randrange(90):
                code = next(codes)
                text = rng.choice(
                    [f"My locker code is {code}", f"The gate code is {code}", "Draft the weekly report"]
                )
                services.inbox.submit(agent.name, ItemKind.OPERATOR_MESSAGE, "operator", text)
                pending.add(agent.name)
            if scheduler.is_asleep(agent.name):
                continue
            if agent.name in pending:
                pending.discard(agent.name)
                deliver(services, agent, scheduler, day, rng, report)
                agent.next_due = None
            # Read once a minute by an idle agent; here again only when it may have moved.
            if agent.next_due is None or agent.next_due <= now:
                agent.run_due_jobs(report)
                due = [d.next_due for d in jobs_due(agent.data, agent.settings, now)]
                agent.next_due = min(due, default=None)
                scheduler.memory_due.note(agent.name, agent.next_due)
            if now.hour == 12 and now.minute == 30 and now.weekday() == 2:
                agent.forget_one(services, rng)
            if now.hour == 3 and now.minute == 33:
                agent.restart()
                agent.next_due = None
        if minute % (24 * 60) == 24 * 60 - 1 and day in (1, 7, days):
            report.storage[day] = {name: folder_size(a.data) / MIB for name, a in agents.items()}
            report.state_db[day] = (
                sum(p.stat().st_size for p in services.paths.root.glob("state.db*") if p.is_file()) / MIB
            )
            report.rss[day] = rss_mib()
    for agent in agents.values():
        agent.store.close()
    report.forgotten = sum(len(agent.forgotten) for agent in agents.values())
    report.forgotten_found = found_forgotten(root, [t for a in agents.values() for t in a.forgotten])
    print_report(report, agents, days)
    services.db.close()
    return report


def found_forgotten(root: Path, texts: list[str]) -> int:
    """How many forgotten texts any file under the fleet's folder still holds: the words that
    carry the fact ("code is 4512"), as bytes, in every file (databases and WALs included)."""
    needles = {" ".join(text.split()[-3:]).encode() for text in texts}
    found = set()
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found |= {needle for needle in needles if needle in data}
    return len(found)


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def print_report(report: Report, agents: dict[str, SimAgent], days: int) -> None:
    ratio = report.on_slot / report.due if report.due else 1.0
    print(f"simulated days: {days}; agents: {', '.join(agents)}")
    print(f"memory jobs run on their slot / due: {report.on_slot} / {report.due} ({ratio:.1%}; goal 100 %)")
    for day, sizes in sorted(report.storage.items()):
        listed = ", ".join(f"{name} {size:.2f} MiB" for name, size in sizes.items())
        print(
            f"day {day}: storage {listed}; state.db {report.state_db[day]:.2f} MiB; RSS {report.rss[day]:.0f} MiB"
        )
    for name, agent in agents.items():
        first = [t for d, t in agent.prompt_tokens if d == 1]
        last = [t for d, t in agent.prompt_tokens if d == days]
        print(f"prompt tokens per model call, {name}: day 1 {_mean(first):.0f}, day {days} {_mean(last):.0f}")
    print(
        f"forgotten texts found in any file: {report.forgotten_found} of {report.forgotten} forgotten (goal 0)"
    )
    print(
        f"model calls of idle heartbeat ticks: {report.idle_model_calls} (goal 0); "
        f"ticks that found work: {report.work_ticks}"
    )


def goals_missed(report: Report, days: int) -> list[str]:
    missed = []
    if report.due and report.on_slot < report.due:
        missed.append("memory jobs late")
    if report.forgotten_found:
        missed.append("forgotten text found")
    if report.idle_model_calls:
        missed.append("idle ticks called the model")
    last = report.storage.get(days, {})
    if any(size > AGENT_STORAGE_BOUND_MIB for size in last.values()):
        missed.append(f"agent storage over {AGENT_STORAGE_BOUND_MIB:g} MiB")
    if report.state_db.get(days, 0.0) > STATE_DB_BOUND_MIB:
        missed.append(f"state.db over {STATE_DB_BOUND_MIB:g} MiB")
    if days in report.rss and 1 in report.rss and report.rss[days] - report.rss[1] > RSS_GROWTH_BOUND_MIB:
        missed.append(f"RSS grew more than {RSS_GROWTH_BOUND_MIB:g} MiB")
    return missed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="flotilla-soak-") as folder:
        report = simulate(args.days, Path(folder), args.seed)
    missed = goals_missed(report, args.days)
    print(f"goals missed: {', '.join(missed)}" if missed else "every goal met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

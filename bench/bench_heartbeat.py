"""Heartbeats: what an idle agent costs, how precisely 100 agents are ticked, how fast a
hibernated agent wakes.

1. Model calls per day of an idle agent with 15-minute ticks: 24 simulated hours with the real
   Scheduler on a manual clock. Peer figure: OpenLegion turns every 15-minute tick of an agent
   that has done anything into a model turn, 96 a day per agent.
2. 100 agents with 10-second heartbeats (jitter 10 s), the real Scheduler on the real clock for
   a bounded period. Agents are simulated in the same process (one in ten has a rule due every
   30 s and answers its heartbeat items at once); what is measured is the scheduler: lag of each
   tick behind its slot (p50/p99) and the CPU the whole process used, as a share of one core.
3. Wake latency of a hibernated agent with the process backend (and, in full runs, the Docker
   backend): `flotilla up -d --runtime R`, wait until the agent hibernates (its unit stopped),
   then time an operator message until the unit is started again (scheduler + backend) and until
   its reply (agent boot, config fetch, inbox claim and one test-model turn included).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from agent_runtime import scaffold  # noqa: E402
from agent_runtime.protocol import ItemKind, RunOutcome, RunRecord, WorkResult  # noqa: E402
from orchestrator.broker import Inbox  # noqa: E402
from orchestrator.cli.client import ApiClient  # noqa: E402
from orchestrator.cli.errors import CliError  # noqa: E402
from orchestrator.config.loader import load_fleet  # noqa: E402
from orchestrator.events import EventBus  # noqa: E402
from orchestrator.fleet.view import FleetView  # noqa: E402
from orchestrator.images.names import DEFAULT_IMAGE  # noqa: E402
from orchestrator.lifecycle import Controls  # noqa: E402
from orchestrator.scheduler.clock import Clock, ManualClock  # noqa: E402
from orchestrator.scheduler.service import DEFAULT_MAX_SLEEP_S, Scheduler  # noqa: E402
from orchestrator.state.db import Database  # noqa: E402
from orchestrator.state.paths import StatePaths  # noqa: E402
from orchestrator.testing.cli import run_flotilla  # noqa: E402
from orchestrator.testing.fake_backend import FakeBackend  # noqa: E402
from orchestrator.wiring import connect_work_arrivals  # noqa: E402

Row = dict[str, str]
BENCH = "heartbeat"
PEER_CALLS_PER_DAY = 96
AGENTS = 100
BUSY_EVERY = 10  # one agent in ten has a rule due every 30 s


def _row(metric: str, value: str, target: str = "") -> Row:
    return {"benchmark": BENCH, "metric": metric, "value": value, "target": target}


@dataclass
class _Parts:
    """What the scheduler is built from here: real state, a real inbox, a fake backend."""

    fleet_view: FleetView
    paths: StatePaths
    db: Database
    events: EventBus
    controls: Controls
    inbox: Inbox

    def scheduler(self, clock: Clock | None = None, max_sleep_s: float = DEFAULT_MAX_SLEEP_S) -> Scheduler:
        scheduler = Scheduler(
            self.db,
            self.paths,
            self.fleet_view,
            self.inbox,
            self.controls,
            self.events,
            FakeBackend(),
            clock=clock,
            max_sleep_s=max_sleep_s,
        )
        connect_work_arrivals(self.inbox, scheduler)
        return scheduler


def _services(root: Path, fleet_yaml: str) -> _Parts:
    root.mkdir(parents=True, exist_ok=True)
    (root / "fleet.yaml").write_text(fleet_yaml)
    fleet = FleetView(load_fleet(root / "fleet.yaml"))
    paths = StatePaths.for_fleet_file(fleet.current().path)
    paths.ensure()
    db = Database(paths.db)
    events = EventBus(db)
    controls = Controls(db)
    return _Parts(fleet, paths, db, events, controls, Inbox(db, events, controls, fleet))


# --- 1. an idle agent's day ------------------------------------------------------------------


def idle_day() -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="flotilla-bench-hb-") as tmp:
        services = _services(
            Path(tmp),
            "version: 1\nfleet: benchidle\nagents:\n  idle:\n    heartbeat: {every: 15m}\n",
        )
        scaffold(services.paths.agent_dir("idle"), {}, {"SYSTEM.md": "policy\n"})
        start = datetime(2025, 1, 6, tzinfo=UTC)
        clock = ManualClock(start)
        scheduler = services.scheduler(clock=clock, max_sleep_s=3600)
        asyncio.run(scheduler.run(until=start + timedelta(days=1)))
        ticks = scheduler.runs.recent("idle", 1000, "tick")
        items = services.inbox.list("idle", 1000, include_done=True)
        services.db.close()
    return [
        _row("idle agent, 15 min ticks: ticks/day", str(len(ticks)), "96"),
        _row(
            "idle agent, 15 min ticks: model calls/day",
            str(len(items)),
            f"0 (peer OpenLegion: {PEER_CALLS_PER_DAY})",
        ),
    ]


# --- 2. 100 agents, 10-second heartbeats -------------------------------------------------------


def _fleet_yaml(n: int) -> str:
    agents = "".join(f"  a{i:03d}:\n    role: bench agent {i}\n" for i in range(n))
    return (
        f"version: 1\nfleet: benchhb\ndefaults:\n  heartbeat: {{every: 10s, jitter: 10s}}\nagents:\n{agents}"
    )


async def _simulated_agent(services: _Parts, scheduler: Scheduler, agent: str) -> None:
    """Answers each heartbeat item at once and posts a turn record, like a fast agent would."""
    while True:
        item = await services.inbox.next(agent, 5.0)
        if item is None:
            continue
        now = datetime.now(UTC)
        services.inbox.complete(agent, item.id, WorkResult(ok=True, text="done"))
        trigger = "heartbeat" if item.kind == ItemKind.HEARTBEAT else "operator"
        record = RunRecord(
            id=uuid.uuid4().hex,
            agent=agent,
            trigger=trigger,
            item_id=item.id,
            model="test",
            started_at=now,
            finished_at=now,
            outcome=RunOutcome.OK,
        )
        await asyncio.to_thread(scheduler.record_turn, record)


async def _run_fleet(services: _Parts, scheduler: Scheduler, seconds: float) -> tuple[float, float]:
    loop = asyncio.get_running_loop()
    services.inbox.bind_loop(loop)
    services.events.bind_loop(loop)
    busy = [f"a{i:03d}" for i in range(0, AGENTS, BUSY_EVERY)]
    agents = [asyncio.create_task(_simulated_agent(services, scheduler, name)) for name in busy]
    cpu0, wall0 = time.process_time(), time.monotonic()
    await scheduler.run(until=datetime.now(UTC) + timedelta(seconds=seconds))
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    for task in agents:
        task.cancel()
    await asyncio.gather(*agents, return_exceptions=True)
    return cpu, wall


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def fleet_lag(seconds: float) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="flotilla-bench-hb-") as tmp:
        services = _services(Path(tmp), _fleet_yaml(AGENTS))
        for index in range(AGENTS):
            workspace = services.paths.workspace(f"a{index:03d}")
            (workspace / "memory").mkdir(parents=True)
            for name in ("SOUL.md", "INSTRUCTIONS.md", "USER.md", "MEMORY.md", "AGENTS.md", "SYSTEM.md"):
                (workspace / name).write_text(f"{name} of agent {index}\n" * 20)
            rules = "- every 30s: poll the queue\n" if index % BUSY_EVERY == 0 else ""
            (workspace / "HEARTBEAT.md").write_text(f"# Heartbeat\n\n## Rules\n\n{rules}")
        scheduler = services.scheduler()
        cpu, wall = asyncio.run(_run_fleet(services, scheduler, seconds))
        ticks = scheduler.runs.recent(None, 100_000, "tick")
        turns = scheduler.runs.recent(None, 100_000, "turn")
        services.db.close()
    lags_ms = [
        (t.started_at - t.scheduled_at).total_seconds() * 1000 for t in ticks if t.scheduled_at is not None
    ]
    outcomes = {o: sum(1 for t in ticks if t.outcome == o) for o in ("idle", "run", "skipped")}
    label = f"{AGENTS} agents, 10 s heartbeats, {seconds:.0f} s"
    return [
        _row(
            f"{label}: ticks (idle/run/skipped)",
            f"{len(ticks)} ({outcomes['idle']}/{outcomes['run']}/{outcomes['skipped']})",
            f"~{int(AGENTS * seconds / 10)}",
        ),
        _row(f"{label}: model turns (agents with a 30 s rule only)", str(len(turns)), ""),
        _row(f"{label}: scheduling lag p50", f"{statistics.median(lags_ms):.1f} ms", "<= 10 ms"),
        _row(f"{label}: scheduling lag p99", f"{_percentile(lags_ms, 0.99):.1f} ms", "<= 100 ms"),
        _row(f"{label}: scheduling lag max", f"{max(lags_ms):.1f} ms", ""),
        _row(f"{label}: orchestrator CPU share", f"{100 * cpu / wall:.1f} % of one core", "<= 5 %"),
    ]


# --- 3. wake latency with the process backend ----------------------------------------------------

WAKE_FLEET = """\
version: 1
fleet: FLEET_NAME
agents:
  sleeper:
    role: sleeps between messages
    hibernate_after: 2s
    heartbeat: {every: 1h}
"""


def _flotilla(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_flotilla(folder, *args)


def _wait_hibernated(client: ApiClient, after: int, timeout_s: float = 60.0) -> int:
    """Wait for the agent's unit to be stopped (the event comes after the stop); returns its seq."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        events = client.get("/api/v1/events/recent", agent="sleeper", after=after, limit=1000)
        for event in events:
            if event["type"] == "agent.hibernated":
                return int(event["seq"])
        if events:
            after = int(events[-1]["seq"])
        time.sleep(0.1)
    raise RuntimeError("the agent did not hibernate")


def _message_round_trip(client: ApiClient) -> float:
    started = time.monotonic()
    for event, data in client.stream(
        "POST",
        "/api/v1/agents/sleeper/messages",
        {"text": "ping", "timeout_s": 60},
        timeout_s=90,
        stream="true",
    ):
        if event == "done":
            if not json.loads(data).get("ok", True):
                raise RuntimeError(f"the agent failed: {data}")
            return time.monotonic() - started
        if event == "error":
            raise RuntimeError(f"no reply: {data}")
    raise RuntimeError("the reply stream ended early")


def _wake_seconds(client: ApiClient, after: int, sent: float) -> float:
    """From sending the message to the wake's `agent.started` event (the backend started the unit)."""
    for event in client.get("/api/v1/events/recent", agent="sleeper", after=after, limit=1000):
        if event["type"] == "agent.started" and str(event["data"].get("reason", "")).startswith("wake"):
            return float(datetime.fromisoformat(event["at"]).timestamp() - sent)
    raise RuntimeError("no wake event was recorded")


def _wake_samples(client: ApiClient, samples: int) -> tuple[list[float], list[float], list[float]]:
    to_start, cold, warm = [], [], []
    # An agent without an always-on rule starts asleep; its first message wakes it, after which
    # it hibernates when idle, which each sample waits for.
    _message_round_trip(client)
    seen = 0
    for _ in range(samples):
        seen = _wait_hibernated(client, seen)
        sent = time.time()
        cold.append(_message_round_trip(client))
        to_start.append(_wake_seconds(client, seen, sent))
        warm.append(_message_round_trip(client))  # awake now: the same message without a wake
    return to_start, cold, warm


def _docker_missing() -> str | None:
    """Why the Docker wake cannot be measured here, or None when it can."""
    try:
        probe = subprocess.run(
            ["docker", "image", "inspect", DEFAULT_IMAGE],
            capture_output=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker unavailable ({exc})"
    return None if probe.returncode == 0 else f"no Docker daemon or no {DEFAULT_IMAGE} image"


def wake_latency(runtime: str, samples: int) -> list[Row]:
    label = f"{runtime} backend"
    if runtime == "docker" and (missing := _docker_missing()):
        return [_row(f"wake latency ({label})", f"not measured: {missing}", "")]
    with tempfile.TemporaryDirectory(prefix="flotilla-bench-wake-") as tmp:
        folder = Path(tmp)
        (folder / "fleet.yaml").write_text(
            WAKE_FLEET.replace("FLEET_NAME", f"benchwake-{uuid.uuid4().hex[:6]}")
        )
        started = _flotilla(folder, "up", "-d", "--runtime", runtime, "--port", "0")
        try:
            if started.returncode != 0:
                raise RuntimeError(f"up failed: {started.stderr.strip() or started.stdout.strip()}")
            client = ApiClient.from_fleet_file(folder / "fleet.yaml", timeout_s=90)
            try:
                to_start, cold, warm = _wake_samples(client, samples)
            finally:
                client.close()
        except (CliError, RuntimeError) as exc:
            return [_row(f"wake latency ({label})", f"not measured: {exc}", "")]
        finally:
            _flotilla(folder, "down", "-v")
    median = statistics.median
    return [
        _row(
            f"hibernated agent: message to unit started, {label} (median of {samples})",
            f"{1000 * median(to_start):.0f} ms",
            "<= 1000 ms" if runtime == "docker" else "<= 500 ms",
        ),
        _row(
            f"hibernated agent: message to reply, {label} (median of {samples})",
            f"{median(cold):.2f} s",
            "<= 5 s" if runtime == "docker" else "<= 3 s",
        ),
        _row(f"awake agent: message to reply, {label} (median of {samples})", f"{median(warm):.2f} s", ""),
        _row(
            f"wake overhead, {label}: unit and agent boot (difference of medians)",
            f"{median(cold) - median(warm):.2f} s",
            "",
        ),
    ]


def run(quick: bool) -> list[Row]:
    rows = idle_day()
    rows += fleet_lag(20.0 if quick else 60.0)
    rows += wake_latency("process", 3 if quick else 7)
    # A Docker wake cycle takes about 10 s; it is measured in full runs only to keep --quick short.
    rows += (
        wake_latency("docker", 5) if not quick else [_row("wake latency (docker backend)", "full run only")]
    )
    return rows


if __name__ == "__main__":
    for line in run("--quick" in sys.argv):
        print(f"{line['metric']}: {line['value']}  (target {line['target'] or '-'})")

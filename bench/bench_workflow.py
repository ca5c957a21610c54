"""Workflows, in process on real SQLite: the real inbox, approvals, engine and its loop; an agent
played by a coroutine that claims each item and answers it at once (what the `test` model's
answer costs is the agent's, not the orchestrator's, and is left out).

1. Overhead per step: the time from a step's predecessor's item being answered to the step's own
   item being queued (p50, p99), for a 20-step chain and for a 50-wide fan-out (each of the 50
   from its run's start); against the limit, a script doing the same chain by putting each item
   itself as soon as the previous answer arrives.
2. Resume after a kill: a new engine's first pass over 200 running runs, each with a step in flight.
3. 1,000 runs of examples/workflow's `digest` started at once: state.db's growth, what the loop's
   full pass over them costs, and the latency of `ps` (GET /api/v1/fleet) and of the run list
   over HTTP on loopback while they wait.
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from agent_runtime.protocol import ItemKind, WorkResult, utcnow  # noqa: E402
from orchestrator.api.app import create_app  # noqa: E402
from orchestrator.approvals.store import ApprovalStore  # noqa: E402
from orchestrator.broker import item_timing  # noqa: E402
from orchestrator.services import Services  # noqa: E402
from orchestrator.testing.fake_fleet import fake_fleet_services  # noqa: E402
from orchestrator.testing.server import serve_app  # noqa: E402
from orchestrator.workflows.engine import WorkflowEngine  # noqa: E402
from orchestrator.workflows.service import WorkflowService  # noqa: E402
from orchestrator.workflows.triggers import WorkflowTriggers  # noqa: E402

Row = dict[str, str]
BENCH = "workflow"
EXAMPLE = REPO / "examples" / "workflow"
INTERFACE = """\
---
operations:
  - name: echo
    input: {type: object, properties: {x: {type: string}}, required: [x]}
    output: {type: object, properties: {x: {type: string}}, required: [x]}
---
Echoes its input.
"""
CHAIN_LENGTH = 20
FAN_WIDTH = 50


def fleet_yaml() -> str:
    chain = "\n".join(
        f"      s{i}: {{agent: worker, operation: echo, input: {{x: {_source(i)}}}"
        + (f", depends_on: [s{i - 1}]" if i > 1 else "")
        + "}"
        for i in range(1, CHAIN_LENGTH + 1)
    )
    fan = "\n".join(
        f"      f{i}: {{agent: worker, operation: echo, input: {{x: \"'{i}'\"}}}}"
        for i in range(1, FAN_WIDTH + 1)
    )
    return f"""\
version: 1
fleet: benchflows
agents:
  worker:
    interface: interface.md
workflows:
  chain:
    steps:
{chain}
  fan:
    max_parallel: {FAN_WIDTH}
    steps:
{fan}
"""


def _source(i: int) -> str:
    return "\"'start'\"" if i == 1 else f"steps.s{i - 1}.output.x"


async def _play_agent(services: Services, agent: str, stop: asyncio.Event) -> None:
    while not stop.is_set():
        item = await services.inbox.next(agent, 0.2)
        if item is not None:
            services.inbox.complete(agent, item.id, WorkResult(ok=True, output=dict(item.input or {})))


def _bind(services: Services) -> None:
    """What the server does when it starts: answers and events reach waiters on this loop."""
    loop = asyncio.get_running_loop()
    services.inbox.bind_loop(loop)
    services.events.bind_loop(loop)


def _percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99


def _finished_at(services: Services, item_id: str | None) -> datetime:
    assert item_id is not None
    timing = item_timing(services.db, item_id)
    assert timing is not None and timing.finished_at is not None
    return timing.finished_at


def _created_at(services: Services, item_id: str | None) -> datetime:
    assert item_id is not None
    timing = item_timing(services.db, item_id)
    assert timing is not None
    return timing.created_at


async def _engine_runs(services: Services, runs: int) -> tuple[list[float], list[float]]:
    """Chain gaps and fan-out delays (ms) over `runs` runs of each workflow, the loop running."""
    _bind(services)
    engine = services.workflows
    loop = WorkflowService(
        engine,
        WorkflowTriggers(engine, services.fleet_view, utcnow),
        services.inbox,
        services.events,
        lambda: _days(30),
    )
    stop = asyncio.Event()
    tasks = [asyncio.create_task(loop.run()), asyncio.create_task(_play_agent(services, "worker", stop))]
    chain_gaps: list[float] = []
    fan_delays: list[float] = []
    try:
        for _ in range(runs):
            for name in ("chain", "fan"):
                run = engine.start(name, {})
                while (current := engine.store.get(run.id)) is not None and current.state == "running":
                    await asyncio.sleep(0.01)
                assert current is not None and current.state == "succeeded", current
                if name == "chain":
                    steps = current.steps
                    for before, after in itertools.pairwise(steps):
                        gap = _created_at(services, after.item_id) - _finished_at(services, before.item_id)
                        chain_gaps.append(gap.total_seconds() * 1000)
                else:
                    fan_delays += [
                        (_created_at(services, s.item_id) - current.created_at).total_seconds() * 1000
                        for s in current.steps
                    ]
    finally:
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return chain_gaps, fan_delays


async def _script_chain(services: Services, runs: int) -> list[float]:
    """The limit: a script that puts each item itself as soon as the previous answer is in."""
    _bind(services)
    stop = asyncio.Event()
    agent = asyncio.create_task(_play_agent(services, "worker", stop))
    gaps: list[float] = []
    try:
        for _ in range(runs):
            value = "start"
            previous: str | None = None
            for _step in range(CHAIN_LENGTH):
                item = services.inbox.submit(
                    "worker", ItemKind.PEER_ASK, "script", operation="echo", input={"x": value}
                )
                if previous is not None:
                    gaps.append(
                        (_created_at(services, item.id) - _finished_at(services, previous)).total_seconds()
                        * 1000
                    )
                result = await services.inbox.wait_result(item.id, 30)
                assert result is not None and result.output is not None, result
                value, previous = result.output["x"], item.id
    finally:
        stop.set()
        agent.cancel()
        await asyncio.gather(agent, return_exceptions=True)
    return gaps


async def _measure(services: Services, runs: int) -> tuple[list[float], list[float], list[float]]:
    """Both on one event loop: the inbox's waits belong to the loop they were made on."""
    chain, fan = await _engine_runs(services, runs)
    return chain, fan, await _script_chain(services, runs)


def _days(n: int) -> Any:
    from datetime import timedelta

    return timedelta(days=n)


def _overhead_rows(folder: Path, quick: bool) -> list[Row]:
    runs = 3 if quick else 10
    with fake_fleet_services(folder, fleet_yaml()) as services:
        chain, fan, script = asyncio.run(_measure(services, runs))
    rows = []
    for label, values in (
        (f"{CHAIN_LENGTH}-step chain: predecessor answered -> next item queued", chain),
        (f"{FAN_WIDTH}-wide fan-out: run started -> item queued", fan),
        (f"the limit, a script putting the {CHAIN_LENGTH}-step chain itself: answer -> next item", script),
    ):
        p50, p99 = _percentiles(values)
        rows.append(_row(f"{label}, p50 / p99 ({len(values)} steps)", f"{p50:.1f} ms / {p99:.1f} ms"))
    return rows


def _resume_rows(folder: Path, quick: bool) -> list[Row]:
    count = 50 if quick else 200
    with fake_fleet_services(folder, fleet_yaml()) as services:
        for _ in range(count):
            services.workflows.start("chain", {})
        started = time.perf_counter()
        engine = WorkflowEngine(
            services.db,
            services.fleet_view,
            services.inbox,
            ApprovalStore(services.db, services.events),
            services.events,
        )
        engine.advance_all()
        took = time.perf_counter() - started
    return [
        _row(
            f"resume: a new engine's first pass over {count} running runs (a step in flight each)",
            f"{took * 1000:.0f} ms",
        )
    ]


def _queued_rows(folder: Path, quick: bool) -> list[Row]:
    count = 200 if quick else 1000
    shutil.copytree(EXAMPLE / "interfaces", folder / "interfaces")
    with fake_fleet_services(folder, (EXAMPLE / "fleet.yaml").read_text()) as services:
        size_before = _db_bytes(services)
        started = time.perf_counter()
        for n in range(count):
            services.workflows.start("digest", {"topic": f"topic {n}"})
        start_s = time.perf_counter() - started
        growth = _db_bytes(services) - size_before
        started = time.perf_counter()
        services.workflows.advance_all()
        full_pass_s = time.perf_counter() - started
        with (
            serve_app(create_app(services)) as url,
            httpx.Client(
                base_url=url, headers={"authorization": f"Bearer {services.operator_token}"}, timeout=30
            ) as client,
        ):
            ps = _latencies(client, "/api/v1/fleet", 20)
            listed = _latencies(client, "/api/v1/workflow-runs?limit=50", 20)
    return [
        _row(f"{count} digest runs started at once: time to start them all", f"{start_s:.2f} s"),
        _row(
            f"{count} digest runs queued: state.db growth (checkpointed)",
            f"{growth / 1024:.0f} KiB ({growth / count:.0f} B per run)",
        ),
        _row(f"the loop's full pass over {count} waiting runs (every 10 s)", f"{full_pass_s * 1000:.0f} ms"),
        _row(
            f"ps (GET /api/v1/fleet) with {count} runs queued, p50 / p99", "{:.1f} ms / {:.1f} ms".format(*ps)
        ),
        _row(
            f"workflow show (50 latest runs) with {count} runs queued, p50 / p99",
            "{:.1f} ms / {:.1f} ms".format(*listed),
        ),
    ]


def _db_bytes(services: Services) -> int:
    """state.db's size with its WAL checkpointed into it (the WAL alone holds pages many times)."""
    services.db.truncate_wal()
    path = Path(str(services.db.path))
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())


def _latencies(client: httpx.Client, path: str, times: int) -> tuple[float, float]:
    found = []
    for _ in range(times):
        started = time.perf_counter()
        client.get(path).raise_for_status()
        found.append((time.perf_counter() - started) * 1000)
    return _percentiles(found)


def _row(metric: str, value: str) -> Row:
    return {"benchmark": BENCH, "metric": metric, "value": value, "target": ""}


def run(quick: bool) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-workflow-") as tmp:
        root = Path(tmp)
        for part, step in (("overhead", _overhead_rows), ("resume", _resume_rows), ("queued", _queued_rows)):
            folder = root / part
            folder.mkdir()
            (folder / "interface.md").write_text(INTERFACE)
            rows += step(folder, quick)
    return rows


if __name__ == "__main__":
    for found in run("--quick" in sys.argv):
        print(f"{found['metric']}: {found['value']}")

"""Floods from every agent of the example fleet against each agent's fair share.

Every agent of `fleet.yaml` (the example fleet) floods at once, over real HTTP on loopback with
its own token: 8 threads posting 15 KB events and 4 threads telling each peer it may talk to
(and one it may not) 256 KiB texts. The fleet runs on the in-memory test backend, so nobody
works the inboxes: what the floods leave is what state.db keeps. Retention runs on its own
schedule (`limits.retention.every`, 1m by default) while the floods run.

Figures: requests accepted and refused (429), `limit.exceeded` events, the peers' unfinished
items, state.db (with its write-ahead log) before, right after the floods and after a retention
pass, what each agent's records take, and the latency of `GET /api/v1/fleet` (`flotilla ps`)
before and after. For contrast, the same floods for a few seconds with the rates and retention
lifted (what the orchestrator did before it had them).
"""

from __future__ import annotations

import multiprocessing
import shutil
import statistics
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import build_services

Row = dict[str, str]
REPO = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024
EVENT = {"type": "agent.reported", "data": {"x": "e" * 15_000}}
TELL_TEXT = "t" * 256 * 1024
EVENT_THREADS = 8
TELL_THREADS = 4
PS_SAMPLES = 20
# Time for the flooding processes to start (and import) before they all begin at once.
SPAWN_LEAD_S = 8.0
# Rates and retention lifted far past any flood: the orchestrator as it was before them.
UNLIMITED = """
limits:
  rates: {events: 1000000/s, tells: 1000000/s, asks: 1000000/s, pair: 1000000/s,
          pair_bytes: 1000g/s, intake: 1000000/s, pending: 10000}
  retention:
    every: 1d
    events: {age: 3650d, size: 100g}
    messages: {age: 3650d, size: 100g}
    inbox: {age: 3650d, size: 100g}
    runs: {age: 3650d, size: 100g}
"""


def _row(metric: str, value: str, target: str = "") -> Row:
    return {"benchmark": "flood", "metric": metric, "value": value, "target": target}


@dataclass
class Tally:
    """Answers by kind ("event", "tell") and outcome (an HTTP status, or "acl" for a tell the
    broker refused with 200 and ok false)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, kind: str, outcome: str) -> None:
        with self.lock:
            counts = self.outcomes.setdefault(kind, {})
            counts[outcome] = counts.get(outcome, 0) + 1

    def merge(self, other: dict[str, dict[str, int]]) -> None:
        for kind, counts in other.items():
            for outcome, n in counts.items():
                mine = self.outcomes.setdefault(kind, {})
                mine[outcome] = mine.get(outcome, 0) + n

    def count(self, kind: str, outcome: str) -> int:
        return self.outcomes.get(kind, {}).get(outcome, 0)


def _fleet(root: Path, extra: str) -> Services:
    shutil.copytree(REPO / "examples", root / "examples")
    (root / "fleet.yaml").write_text((REPO / "fleet.yaml").read_text() + extra)
    services = build_services(load_fleet(root / "fleet.yaml"), FakeBackend())
    services.manager.apply()
    return services


def _db_bytes(services: Services) -> int:
    db = Path(str(services.db.path))
    return sum(path.stat().st_size for path in db.parent.glob(db.name + "*"))


def _ps_latency_ms(operator: httpx.Client) -> float:
    samples = []
    for _ in range(PS_SAMPLES):
        started = time.perf_counter()
        operator.get("/api/v1/fleet").raise_for_status()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def _flood_events(url: str, token: str, until: float, tally: Tally) -> None:
    with httpx.Client(base_url=url, headers={"authorization": f"Bearer {token}"}, timeout=30) as client:
        while time.time() < until:
            tally.add("event", str(client.post("/agent/v1/events", json=EVENT).status_code))


def _flood_tells(url: str, token: str, peers: list[str], until: float, tally: Tally) -> None:
    with httpx.Client(base_url=url, headers={"authorization": f"Bearer {token}"}, timeout=30) as client:
        while time.time() < until:
            for peer in peers:
                answer = client.post("/agent/v1/tell", json={"to": peer, "text": TELL_TEXT})
                refused_by_acl = answer.status_code == 200 and not answer.json()["ok"]
                tally.add("tell", "acl" if refused_by_acl else str(answer.status_code))


def agent_flood(
    url: str, token: str, peers: list[str], start: float, seconds: float
) -> dict[str, dict[str, int]]:
    """One agent's floods, in a process of its own (so that they do not share the server's
    interpreter): from the wall-clock time `start`, for `seconds`."""
    tally = Tally()
    # A process that started late (a loaded machine) still floods for the whole time.
    until = max(start, time.time()) + seconds
    threads = [
        threading.Thread(target=_flood_events, args=(url, token, until, tally)) for _ in range(EVENT_THREADS)
    ]
    threads += [
        threading.Thread(target=_flood_tells, args=(url, token, peers, until, tally))
        for _ in range(TELL_THREADS)
    ]
    time.sleep(max(0.0, start - time.time()))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally.outcomes


def _targets(services: Services, agent: str) -> list[str]:
    """The peers it may talk to, and one it may not (paid from its own rate only)."""
    config = services.fleet.config.agents
    allowed = list(config[agent].talks_to)
    barred = [name for name in config if name != agent and name not in allowed][:1]
    return allowed + barred


def _retention_loop(services: Services, stop: threading.Event) -> None:
    every = services.fleet.config.limits.retention.every_s
    while not stop.wait(every):
        services.retention.apply()


@dataclass
class Outcome:
    tally: Tally
    db_before: int
    db_flooded: int
    db_kept: int
    ps_before_ms: float
    ps_after_ms: float
    limit_events: int
    pending: dict[str, int]
    stored: dict[str, int]
    retention_ms: float


def _flood(extra: str, seconds: float) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="flotilla-bench-flood-") as tmp:
        services = _fleet(Path(tmp), extra)
        tokens = {name: services.tokens.mint(name) for name in services.fleet.config.agents}
        try:
            with serve_app(create_app(services)) as url:
                auth = {"authorization": f"Bearer {services.operator_token}"}
                with httpx.Client(base_url=url, headers=auth, timeout=30) as operator:
                    services.retention.apply()
                    db_before, ps_before = _db_bytes(services), _ps_latency_ms(operator)
                    tally, stop = Tally(), threading.Event()
                    retention = threading.Thread(target=_retention_loop, args=(services, stop), daemon=True)
                    retention.start()
                    start = time.time() + SPAWN_LEAD_S
                    spawn = multiprocessing.get_context("spawn")
                    with ProcessPoolExecutor(len(tokens), mp_context=spawn) as pool:
                        floods = [
                            pool.submit(agent_flood, url, token, _targets(services, agent), start, seconds)
                            for agent, token in tokens.items()
                        ]
                        for flood in floods:
                            tally.merge(flood.result())
                    stop.set()
                    db_flooded, ps_after = _db_bytes(services), _ps_latency_ms(operator)
                    started = time.perf_counter()
                    services.retention.apply()
                    retention_ms = (time.perf_counter() - started) * 1000
                    view = operator.get("/api/v1/limits").json()
            events = sum(1 for e in services.events.recent(1000) if e.type == "limit.exceeded")
            return Outcome(
                tally=tally,
                db_before=db_before,
                db_flooded=db_flooded,
                db_kept=_db_bytes(services),
                ps_before_ms=ps_before,
                ps_after_ms=ps_after,
                limit_events=events,
                pending={name: services.inbox.pending(name) for name in tokens},
                stored={
                    s["agent"]: s["events"] + s["messages"] + s["inbox"] + s["runs"] for s in view["stored"]
                },
                retention_ms=retention_ms,
            )
        finally:
            services.db.close()


def _mib(size: float) -> str:
    return f"{size / MIB:.1f} MiB"


def _rows(label: str, seconds: float, outcome: Outcome, agents: int) -> list[Row]:
    tally = outcome.tally
    refused = tally.count("event", "429") + tally.count("tell", "429")
    return [
        _row(
            f"{label}: events stored / refused (429) in {seconds:g}s, {agents} agents",
            f"{tally.count('event', '204')} / {tally.count('event', '429')}",
        ),
        _row(
            f"{label}: tells queued / refused by talks_to / refused (429)",
            f"{tally.count('tell', '200')} / {tally.count('tell', 'acl')} / {tally.count('tell', '429')}",
        ),
        _row(f"{label}: limit.exceeded events for {refused} refusals", str(outcome.limit_events)),
        _row(
            f"{label}: unfinished inbox items per agent",
            ", ".join(f"{a} {n}" for a, n in outcome.pending.items()),
        ),
        _row(
            f"{label}: state.db before / after the floods / after a retention pass",
            f"{_mib(outcome.db_before)} / {_mib(outcome.db_flooded)} / {_mib(outcome.db_kept)}",
        ),
        _row(
            f"{label}: records kept per agent (events, messages, inbox, runs)",
            ", ".join(f"{a} {_mib(n)}" for a, n in sorted(outcome.stored.items())),
        ),
        _row(f"{label}: one retention pass after the floods", f"{outcome.retention_ms:.0f} ms"),
        _row(
            f"{label}: GET /api/v1/fleet (flotilla ps) median before / after",
            f"{outcome.ps_before_ms:.1f} ms / {outcome.ps_after_ms:.1f} ms",
        ),
    ]


def run(quick: bool) -> list[Row]:
    seconds = 10.0 if quick else 60.0
    limited = _flood("", seconds)
    agents = len(limited.pending)
    rows = _rows("fair share (defaults)", seconds, limited, agents)
    bound = load_fleet_bound()
    rows.append(
        _row(
            "per-agent bound of the retention rules (defaults)",
            _mib(bound),
            "records kept per agent under it",
        )
    )
    lifted_s = 5.0 if quick else 10.0
    lifted = _flood(UNLIMITED, lifted_s)
    rows += _rows("rates and retention lifted", lifted_s, lifted, agents)
    return rows


def load_fleet_bound() -> int:
    from orchestrator.config.fair_share import RetentionConfig

    return RetentionConfig().per_agent_bytes


if __name__ == "__main__":
    import sys

    from bench.run import table

    print(table(run("--quick" in sys.argv)))

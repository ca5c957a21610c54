"""What one supervisor pass costs the orchestrator: listing the awake agents' units, judging
each one and keeping the lifecycle's record of what the engine reported.

100 always-on agents on the in-package fake engine (so that what is measured is the
orchestrator's own work, not an engine's API), with the real state.db, fleet manager and
supervisor: the median and p95 wall clock of a pass where nothing changed, then of a pass that
finds 10 agents exited and restarts them.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from orchestrator.config.loader import load_fleet
from orchestrator.running_agents.supervisor import Supervisor
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.wiring import reconciling_services

Row = dict[str, str]
AGENTS = 100
CHANGED = 10


def _fleet_file(folder: Path) -> Path:
    body = "".join(f"  agent-{n:03d}:\n    role: one\n    always_on: true\n" for n in range(AGENTS))
    path = folder / "fleet.yaml"
    path.write_text(f"version: 1\nfleet: bench\nagents:\n{body}")
    return path


def _timed_pass(supervisor: Supervisor) -> tuple[float, list[str]]:
    started = time.perf_counter()
    restarted = supervisor.check_once()
    return time.perf_counter() - started, restarted


def run(quick: bool) -> list[Row]:
    passes = 50 if quick else 300
    rounds = 5 if quick else AGENTS // CHANGED
    with tempfile.TemporaryDirectory() as folder:
        engine = FakeBackend()
        core, manager = reconciling_services(load_fleet(_fleet_file(Path(folder))), engine)
        assert all(result.ok for result in manager.apply())
        supervisor = Supervisor(
            core.db, core.fleet_view, manager, core.backend, core.controls, core.health, core.events
        )
        steady = [_timed_pass(supervisor)[0] for _ in range(passes)]
        restarts = []
        units = sorted(engine.list({}), key=lambda unit: unit.agent)
        for round_ in range(rounds):
            # Other agents each round: a restarted one waits out its backoff before the next.
            for unit in units[round_ * CHANGED : (round_ + 1) * CHANGED]:
                engine.stop(unit.id)
            seconds, restarted = _timed_pass(supervisor)
            assert len(restarted) == CHANGED, restarted
            restarts.append(seconds)
        core.db.close()
    quantiles = statistics.quantiles(steady, n=20)
    return [
        {
            "benchmark": "supervisor_pass",
            "metric": f"a pass over {AGENTS} awake agents, nothing changed: p50 / p95 of {passes}",
            "value": f"{statistics.median(steady) * 1000:.2f} / {quantiles[18] * 1000:.2f} ms",
            "target": "",
        },
        {
            "benchmark": "supervisor_pass",
            "metric": f"a pass that restarts {CHANGED} exited agents of {AGENTS}: median of {rounds}",
            "value": f"{statistics.median(restarts) * 1000:.2f} ms",
            "target": "",
        },
    ]


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)

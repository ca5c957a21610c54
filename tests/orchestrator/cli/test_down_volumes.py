"""`down -v` deletes the fleet's state (state.db with its ledger and budgets, tokens, the agents'
storage) and forgets the runtime it ran on; plain `down` keeps state but forgets the runtime."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.testing.cli import free_port, run_flotilla

FLEET = """\
version: 1
fleet: gone
defaults:
  always_on: true
agents:
  writer:
    role: writes
"""


def up(folder: Path) -> None:
    started = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
    assert started.returncode == 0, started.stdout + started.stderr
    assert "1 agent checked in after" in started.stdout and "it takes messages after" in started.stdout


def spent_today(folder: Path) -> float:
    report = run_flotilla(folder, "costs", "--json")
    assert report.returncode == 0, report.stderr
    return float(sum(agent["today_usd"] for agent in json.loads(report.stdout)["agents"]))


def test_down_v_then_up_starts_from_nothing(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    state = tmp_path / ".flotilla"
    try:
        up(tmp_path)
        assert run_flotilla(tmp_path, "send", "writer", "spend something").returncode == 0
        assert spent_today(tmp_path) > 0
        (state / "backups").mkdir(exist_ok=True)
        (state / "backups" / "keep.txt").write_text("an operator's copy")

        down = run_flotilla(tmp_path, "down", "-v")
        assert down.returncode == 0, down.stdout + down.stderr
        assert "deleted the fleet's state" in down.stdout and "kept backups/" in down.stdout
        assert sorted(p.name for p in state.iterdir()) == ["backups"]
        assert "the next `flotilla up` runs on docker unless --runtime process" in down.stdout

        up(tmp_path)
        assert spent_today(tmp_path) == 0
    finally:
        run_flotilla(tmp_path, "down", "-v", "--runtime", "process")


def test_plain_down_keeps_state_and_forgets_the_runtime(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    state = tmp_path / ".flotilla"
    try:
        up(tmp_path)
        assert (state / "runtime").read_text().strip() == "process"
        down = run_flotilla(tmp_path, "down")
        assert down.returncode == 0, down.stdout + down.stderr
        assert (state / "state.db").exists() and not (state / "runtime").exists()
    finally:
        run_flotilla(tmp_path, "down", "-v", "--runtime", "process")

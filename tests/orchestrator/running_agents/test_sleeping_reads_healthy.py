"""A sleeping agent reads as healthy: `up -d` and `ps` say it is asleep and wakes on work, `ps`
counts awake, asleep and broken agents apart, and a unit the engine is still starting (a swarm
task on its way) reads as starting, not down."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from orchestrator.api.operator.fleet_status import _health
from orchestrator.backends.base import UnitInfo
from orchestrator.cli.detach import _ready_line
from orchestrator.cli.render import awake_summary, fleet_table
from orchestrator.testing.cli import free_port, run_flotilla
from orchestrator.testing.fake_fleet import fake_fleet_services

FLEET = """\
version: 1
fleet: naps
agents:
  dozer:
    role: sleeps until it has work
  keeper:
    role: always there
    always_on: true
"""


def _agent(name: str, **changes: Any) -> dict[str, Any]:
    agent = {
        "name": name,
        "state": "running",
        "health": "healthy",
        "hibernated": False,
        "restarts": 0,
        "uptime_s": 30.0,
        "memory_bytes": None,
        "pending": 0,
        "spend_today_usd": 0.0,
        "model": "test",
    }
    return agent | changes


def _text(renderable: Any) -> str:
    out = io.StringIO()
    Console(file=out, width=240, color_system=None).print(renderable)
    return out.getvalue()


def test_a_hibernated_agent_reads_asleep_and_never_down() -> None:
    status = {
        "fleet": "naps",
        "runtime": "docker",
        "agents": [_agent("dozer", state="missing", health="down", hibernated=True, uptime_s=None)],
    }
    row = _text(fleet_table(status)).splitlines()[-2]
    assert "asleep (wakes on work)" in row
    assert "down" not in row and "hibernated" not in row


def test_ps_counts_awake_asleep_and_broken_apart() -> None:
    status = {
        "awake": 2,
        "agents": [
            _agent("a"),
            _agent("b", state="exited", health="down"),
            _agent("c", state="missing", health="down", hibernated=True),
            _agent("d", state="missing", health="down", hibernated=True),
            _agent("e", state="exited", health="down", held="stopped"),
        ],
    }
    summary = awake_summary(status)
    assert summary.startswith("2 of 5 agents awake, 2 asleep (wake on work), [red]1 broken[/red]")


def test_up_says_a_fleet_of_sleepers_is_ready() -> None:
    assert _ready_line(0, 1, None, 6.1) == "ready after 6.1s: 1 agent asleep (wakes on work)"
    assert _ready_line(2, 3, 1.5, 2.0) == (
        "2 agents checked in after 1.5s, all take messages after 2.0s; 3 agents asleep (wake on work)"
    )
    assert _ready_line(1, 0, None, 2.0) == "1 agent checked in after 2.0s, it takes messages after 2.0s"


def test_a_unit_the_engine_is_still_starting_reads_starting(tmp_path: Path) -> None:
    unit = UnitInfo(
        id="s1", name="flotilla-naps-keeper", agent="keeper", fleet="naps", config_hash="", state="created"
    )
    with fake_fleet_services(tmp_path, FLEET) as services:
        assert _health(services, "keeper", unit) == "starting"
        exited = UnitInfo(
            id="s1", name=unit.name, agent="keeper", fleet="naps", config_hash="", state="exited"
        )
        assert _health(services, "keeper", exited) == "down"
        assert _health(services, "keeper", None) == "down"
        assert _health(services, "dozer", unit, asleep=True) == "down"


@pytest.fixture(scope="module")
def naps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    folder = tmp_path_factory.mktemp("naps")
    (folder / "fleet.yaml").write_text(FLEET)
    try:
        started = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder, started.stdout
    finally:
        run_flotilla(folder, "down", "-v")


def test_up_d_says_the_sleeping_agent_wakes_on_work(naps: tuple[Path, str]) -> None:
    said = " ".join(naps[1].split())  # the console folds long lines where it is not a terminal
    assert "1 agent checked in after" in said
    assert "; 1 agent asleep (wakes on work)" in said
    assert "until they have work" not in said


def test_ps_shows_the_sleeping_agent_asleep_and_counts_it(naps: tuple[Path, str]) -> None:
    folder, _ = naps
    table = run_flotilla(folder, "ps").stdout
    dozer = next(line for line in table.splitlines() if "dozer" in line)
    assert "asleep (wakes on work)" in dozer and "down" not in dozer
    assert "1 of 2 agents awake, 1 asleep (wake on work), 0 broken" in table


def test_ps_json_keeps_its_shape(naps: tuple[Path, str]) -> None:
    folder, _ = naps
    status = json.loads(run_flotilla(folder, "ps", "--json").stdout)
    dozer = next(agent for agent in status["agents"] if agent["name"] == "dozer")
    assert dozer["hibernated"] is True and dozer["health"] == "down"
    assert "asleep" not in status and "broken" not in status

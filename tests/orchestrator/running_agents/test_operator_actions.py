"""Acting on one agent or the whole fleet from the command line, against a real orchestrator
on the process runtime: stop, start, restart, pause, resume, exec, the operator token."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import fleet_status, free_port, run_flotilla, wait_for

FLEET = """\
version: 1
fleet: acts
agents:
  alpha:
    role: first
  beta:
    role: second
"""


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("acts")
    (folder / "fleet.yaml").write_text(FLEET)
    port = str(free_port())
    started = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", port)
    assert started.returncode == 0, started.stdout + started.stderr
    assert "runtime: process (--runtime)" in started.stdout
    (folder / "port").write_text(port)
    try:
        yield folder
    finally:
        run_flotilla(folder, "down", "-v")


def restart_orchestrator(folder: Path) -> None:
    paths = StatePaths.for_fleet_file(folder / "fleet.yaml")
    endpoint = read_endpoint(paths)
    assert endpoint is not None
    os.kill(endpoint.pid, signal.SIGTERM)
    wait_for(lambda: read_endpoint(paths) is None, "the orchestrator to stop")
    started = run_flotilla(folder, "up", "-d", "--port", (folder / "port").read_text())
    assert started.returncode == 0, started.stdout + started.stderr
    assert "runtime: process (the one this fleet last ran on" in started.stdout


def agent_token(folder: Path, agent: str) -> str:
    return (folder / ".flotilla" / "tokens" / agent).read_text().strip()


def test_a_paused_agent_keeps_its_inbox_and_makes_no_model_call(fleet: Path) -> None:
    assert "beta paused" in run_flotilla(fleet, "pause", "beta").stdout
    assert fleet_status(fleet)["beta"]["held"] == "paused"
    sent = run_flotilla(fleet, "send", "beta", "are you there?", "--timeout", "3")
    assert sent.returncode != 0 and "stays queued" in sent.stderr
    assert fleet_status(fleet)["beta"]["pending"] == 1
    url = read_endpoint(StatePaths.for_fleet_file(fleet / "fleet.yaml"))
    assert url is not None
    refused = httpx.post(
        f"{url.url}/v1/chat/completions",
        headers={"authorization": f"Bearer {agent_token(fleet, 'beta')}"},
        json={"model": "test", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert refused.status_code == 423
    assert "paused by the operator" in refused.json()["error"]["message"]
    tick = run_flotilla(fleet, "heartbeat", "beta")
    assert "held" in tick.stdout or "paused" in tick.stdout
    assert "beta resumed" in run_flotilla(fleet, "resume", "beta").stdout
    wait_for(lambda: fleet_status(fleet)["beta"]["pending"] == 0, "the queued message to be answered")


def test_pause_all_is_a_kill_switch_that_survives_a_restart(fleet: Path) -> None:
    assert "every agent paused" in run_flotilla(fleet, "pause", "--all").stdout
    restart_orchestrator(fleet)
    agents = fleet_status(fleet)
    assert {a["held"] for a in agents.values()} == {"paused"}
    assert run_flotilla(fleet, "pause").returncode == 2  # neither an agent nor --all
    assert "every agent resumed" in run_flotilla(fleet, "resume", "--all").stdout
    assert {a["held"] for a in fleet_status(fleet).values()} == {None}
    reply = run_flotilla(fleet, "send", "alpha", "back to work")
    assert reply.returncode == 0 and "back to work" in reply.stdout


def test_a_stopped_agent_stays_stopped_until_started(fleet: Path) -> None:
    assert "alpha stopped" in run_flotilla(fleet, "stop", "alpha").stdout
    time.sleep(6)  # several supervisor passes: it must not restart alpha
    alpha = fleet_status(fleet)["alpha"]
    assert alpha["state"] != "running" and alpha["held"] == "stopped"
    assert "stopped (operator)" in run_flotilla(fleet, "ps").stdout
    restart_orchestrator(fleet)
    assert fleet_status(fleet)["alpha"]["state"] != "running"
    assert "alpha started" in run_flotilla(fleet, "start", "alpha").stdout
    wait_for(lambda: fleet_status(fleet)["alpha"]["health"] == "healthy", "alpha to check in")


def test_restart_and_exec(fleet: Path) -> None:
    assert "beta restarted" in run_flotilla(fleet, "restart", "beta").stdout
    wait_for(lambda: fleet_status(fleet)["beta"]["health"] == "healthy", "beta to check in again")
    ran = run_flotilla(
        fleet, "exec", "beta", "--", sys.executable, "-c", "import os; print(os.environ['FLOTILLA_AGENT'])"
    )
    assert ran.returncode == 0 and ran.stdout.strip() == "beta"
    failed = run_flotilla(fleet, "exec", "beta", "--", sys.executable, "-c", "raise SystemExit(3)")
    assert failed.returncode == 3
    unknown = run_flotilla(fleet, "stop", "ghost")
    assert unknown.returncode == 2 and "no agent 'ghost'" in unknown.stderr


def test_the_operator_token_survives_restarts_until_rotated(fleet: Path) -> None:
    paths = StatePaths.for_fleet_file(fleet / "fleet.yaml")
    before = read_endpoint(paths)
    assert before is not None
    restart_orchestrator(fleet)
    after = read_endpoint(paths)
    assert after is not None and after.token == before.token
    assert run_flotilla(fleet, "dashboard").stdout.strip() == f"{after.url}/?token={after.token}"
    rotated = run_flotilla(fleet, "token", "rotate")
    assert rotated.returncode == 0
    new_token = rotated.stdout.strip().splitlines()[-1]
    assert new_token != before.token
    old = httpx.get(f"{after.url}/api/v1/fleet", headers={"authorization": f"Bearer {before.token}"})
    assert old.status_code == 401
    assert run_flotilla(fleet, "ps").returncode == 0  # the CLI reads the new token
    assert (fleet / ".flotilla" / "operator.token").stat().st_mode & 0o077 == 0

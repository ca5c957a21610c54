"""Chaos: bounded traffic while agents are killed, paused and restarted and the orchestrator is
killed with SIGKILL and started again; then an audit of what became of every accepted request.

Traffic: operator messages to every agent, asks (the coordinator asks the researcher's
`find_facts`), tells (the coordinator tells the writer) and operator edits of MEMORY.md.
Faults, one per round, in turn: SIGKILL an agent's container, pause and later resume an agent,
restart an agent, SIGKILL the orchestrator and `up -d` again.

The audit reads state.db once the fleet is down: every accepted request (an operator message
that got an item id) was answered exactly once or failed with a reason; no ask is left
pending; no file of an operator's copy is torn (it equals its newest version, one of the texts
written); the ledger's daily rollup equals the sum of its settled calls; state.db passes
SQLite's integrity check. It prints sent / accepted / answered / failed / lost / duplicated
and fails on any lost or duplicated request.

The default run is short (CI runs it with the suite). A longer one:

    CHAOS_ROUNDS=30 FLOTILLA_IMAGE=flotilla/agent:latest pytest tests -m chaos -s
"""

from __future__ import annotations

import json
import os
import random
import secrets
import shutil
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker.errors
import httpx
import pytest

from orchestrator.backends.base import LABEL_AGENT, LABEL_FLEET
from orchestrator.images.build import ImageBuildResult
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import free_port, run_flotilla, wait_for

pytestmark = [pytest.mark.chaos, pytest.mark.docker]

REPO = Path(__file__).resolve().parents[3]
AGENTS = ("coordinator", "researcher", "writer")
ROUNDS = int(os.environ.get("CHAOS_ROUNDS", "4"))
PER_ROUND = int(os.environ.get("CHAOS_REQUESTS_PER_ROUND", "6"))
SETTLE_S = float(os.environ.get("CHAOS_SETTLE_S", "240"))
FINAL_STATES = {"done", "failed", "expired", "dead", "dropped"}


@dataclass
class Ledger:
    """What the traffic did, as the operator saw it."""

    sent: int = 0
    accepted: dict[str, str] = field(default_factory=dict)  # item id -> agent
    refused: list[str] = field(default_factory=list)
    memory_texts: dict[str, set[str]] = field(default_factory=dict)


@dataclass
class Fleet:
    folder: Path
    name: str
    image: str
    port: int
    docker: Any

    def flotilla(self, *args: str) -> str:
        result = run_flotilla(self.folder, *args, timeout=300)
        assert result.returncode == 0, f"flotilla {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    def up(self) -> None:
        self.flotilla("up", "-d", "--runtime", "docker", "--port", str(self.port), "--image", self.image)

    def client(self) -> httpx.Client | None:
        endpoint = read_endpoint(StatePaths.for_fleet_file(self.folder / "fleet.yaml"))
        if endpoint is None:
            return None
        return httpx.Client(
            base_url=endpoint.url, headers={"authorization": f"Bearer {endpoint.token}"}, timeout=10.0
        )

    def container(self, agent: str) -> Any:
        found = self.docker.containers.list(
            filters={"label": [f"{LABEL_FLEET}={self.name}", f"{LABEL_AGENT}={agent}"]}
        )
        return found[0] if found else None

    def orchestrator_pid(self) -> int | None:
        endpoint = read_endpoint(StatePaths.for_fleet_file(self.folder / "fleet.yaml"))
        return endpoint.pid if endpoint else None


# --- traffic ----------------------------------------------------------------------------------


def _post_message(fleet: Fleet, ledger: Ledger, agent: str, text: str) -> None:
    ledger.sent += 1
    client = fleet.client()
    if client is None:
        ledger.refused.append(f"{agent}: no orchestrator")
        return
    try:
        response = client.post(f"/api/v1/agents/{agent}/messages", json={"text": text})
    except httpx.HTTPError as failed:
        ledger.refused.append(f"{agent}: {type(failed).__name__}")
        return
    finally:
        client.close()
    if response.status_code == 200:
        ledger.accepted[response.json()["item_id"]] = agent
    else:
        ledger.refused.append(f"{agent}: HTTP {response.status_code}")


def _edit_memory(fleet: Fleet, ledger: Ledger, agent: str, serial: int) -> None:
    text = f"# Memory\n\nchaos edit {serial}: " + "x" * random.randint(10, 2000) + "\n"
    ledger.memory_texts.setdefault(agent, set()).add(text)
    client = fleet.client()
    if client is None:
        return
    try:
        client.put(f"/api/v1/agents/{agent}/workspace/MEMORY.md", json={"content": text, "reason": "chaos"})
    except httpx.HTTPError:
        return  # its outcome is unknown; the audit accepts any text that was sent
    finally:
        client.close()


def send_traffic(fleet: Fleet, ledger: Ledger, round_no: int) -> None:
    for n in range(PER_ROUND):
        serial = round_no * 100 + n
        choice = n % 4
        if choice == 0:
            _post_message(fleet, ledger, random.choice(AGENTS), f"chaos message {serial}")
        elif choice == 1:
            _post_message(
                fleet, ledger, "coordinator", f'ask researcher find_facts {{"topic": "chaos {serial}"}}'
            )
        elif choice == 2:
            tell = {"agent": "writer", "text": f"chaos tell {serial}"}
            _post_message(fleet, ledger, "coordinator", f"call tell_agent {json.dumps(tell)}")
        else:
            _edit_memory(fleet, ledger, random.choice(AGENTS), serial)


# --- faults -----------------------------------------------------------------------------------


def kill_agent(fleet: Fleet, agent: str) -> str:
    container = fleet.container(agent)
    if container is not None:
        try:
            container.kill()
        except docker.errors.APIError:
            return f"{agent} was not running"
    return f"SIGKILL {agent}"


def pause_agent(fleet: Fleet, agent: str) -> str:
    fleet.flotilla("pause", agent)
    return f"paused {agent}"


def restart_agent(fleet: Fleet, agent: str) -> str:
    fleet.flotilla("restart", agent)
    return f"restarted {agent}"


def kill_orchestrator(fleet: Fleet, agent: str) -> str:
    pid = fleet.orchestrator_pid()
    if pid is not None:
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not _alive(pid), "the orchestrator to die", 30)
    fleet.up()
    return "SIGKILL orchestrator, up -d"


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


FAULTS: list[Callable[[Fleet, str], str]] = [kill_agent, pause_agent, restart_agent, kill_orchestrator]


# --- audit ------------------------------------------------------------------------------------


@dataclass
class Audit:
    answered: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def settled(db_path: Path, item_ids: list[str]) -> bool:
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as db:
        marks = ",".join("?" * len(item_ids))
        rows = db.execute(f"SELECT state FROM inbox WHERE id IN ({marks})", item_ids).fetchall()
        pending_asks = db.execute("SELECT COUNT(*) FROM broker_messages WHERE state = 'pending'").fetchone()[
            0
        ]
    return len(rows) == len(item_ids) and all(r[0] in FINAL_STATES for r in rows) and pending_asks == 0


def audit(fleet: Fleet, ledger: Ledger) -> Audit:
    found = Audit()
    paths = StatePaths.for_fleet_file(fleet.folder / "fleet.yaml")
    with sqlite3.connect(f"file:{paths.db}?mode=ro", uri=True) as db:
        db.row_factory = sqlite3.Row
        for item_id in ledger.accepted:
            row = db.execute("SELECT state, result FROM inbox WHERE id = ?", (item_id,)).fetchone()
            if row is None or row["state"] not in FINAL_STATES:
                found.lost.append(f"{item_id} ({row['state'] if row else 'missing'})")
            elif row["state"] == "done":
                found.answered += 1
            else:
                reason = json.loads(row["result"] or "{}").get("error") or row["state"]
                found.failed[item_id] = reason
        for row in db.execute(
            "SELECT item_id, COUNT(*) AS n FROM runs WHERE item_id IS NOT NULL AND outcome = 'ok'"
            " GROUP BY item_id HAVING n > 1"
        ):
            found.duplicated.append(f"{row['item_id']} answered {row['n']} times")
        for row in db.execute("SELECT id, item_id FROM broker_messages WHERE state = 'pending'"):
            found.lost.append(f"ask {row['id']} still pending")
        settled_usd = db.execute(
            "SELECT COALESCE(SUM(cost_usd), 0) FROM gateway_usage WHERE status != 'reserved'"
        ).fetchone()[0]
        rollup_usd = db.execute(
            "SELECT COALESCE(SUM(usd), 0) FROM gateway_spend_daily WHERE subject = ?", ("",)
        ).fetchone()[0]
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    if abs(settled_usd - rollup_usd) > 1e-9:
        found.problems.append(f"ledger: settled calls sum to {settled_usd}, the rollup to {rollup_usd}")
    if integrity != "ok":
        found.problems.append(f"state.db integrity: {integrity}")
    found.problems += torn_files(paths, ledger)
    return found


def torn_files(paths: StatePaths, ledger: Ledger) -> list[str]:
    problems = []
    for agent in AGENTS:
        current = (paths.workspace(agent) / "MEMORY.md").read_text()
        versions = sorted((paths.agent_dir(agent) / "versions" / "MEMORY").glob("*.md"))
        newest = versions[-1].read_text() if versions else None
        if newest is not None and current != newest:
            problems.append(f"{agent}/MEMORY.md differs from its newest version")
        written = ledger.memory_texts.get(agent, set())
        if written and current not in written and not current.startswith("# Memory"):
            problems.append(f"{agent}/MEMORY.md holds text nobody wrote ({len(current)} bytes)")
    return problems


# --- the run ----------------------------------------------------------------------------------


@pytest.fixture
def fleet(agent_image: ImageBuildResult, docker_client: Any, tmp_path: Path) -> Iterator[Fleet]:
    name = f"flt-test-chaos-{secrets.token_hex(3)}"
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    text = (REPO / "fleet.yaml").read_text().replace("fleet: demo", f"fleet: {name}")
    # Budgets high enough that a long run measures faults, not the example's daily caps.
    text = text.replace("daily_usd: 1.00, monthly_usd: 10.00", "daily_usd: 1000, monthly_usd: 10000")
    text = text.replace("budget: { daily_usd: 5.00 }", "budget: { daily_usd: 5000 }")
    (tmp_path / "fleet.yaml").write_text(text)
    running = Fleet(tmp_path, name, agent_image.tag, free_port(), docker_client)
    try:
        running.up()
        yield running
    finally:
        run_flotilla(tmp_path, "down", "-v")


def test_no_accepted_request_is_lost_or_duplicated_under_faults(fleet: Fleet) -> None:
    random.seed(int(os.environ.get("CHAOS_SEED", "14")))
    ledger = Ledger()
    stop = threading.Event()

    def traffic() -> None:
        batch = 0
        while not stop.is_set():
            send_traffic(fleet, ledger, batch)
            batch += 1
            stop.wait(1.0)

    sender = threading.Thread(target=traffic, name="chaos-traffic")
    sender.start()
    faults_done = []
    try:
        for round_no in range(ROUNDS):
            time.sleep(3.0)
            fault = FAULTS[round_no % len(FAULTS)]
            agent = random.choice(AGENTS)
            faults_done.append(fault(fleet, agent))
            if fault is pause_agent:
                time.sleep(3.0)
                fleet.flotilla("resume", agent)
    finally:
        stop.set()
        sender.join(60)
    db = StatePaths.for_fleet_file(fleet.folder / "fleet.yaml").db
    wait_for(lambda: settled(db, list(ledger.accepted)), "every accepted request to end", SETTLE_S, 2.0)
    fleet.flotilla("down")

    found = audit(fleet, ledger)

    print(
        f"\nchaos: {ROUNDS} rounds ({', '.join(faults_done)})\n"
        f"sent {ledger.sent} / accepted {len(ledger.accepted)} / answered {found.answered} / "
        f"failed {len(found.failed)} / lost {len(found.lost)} / duplicated {len(found.duplicated)}"
        f" (not accepted: {len(ledger.refused)})"
    )
    for item_id, reason in found.failed.items():
        print(f"  failed {item_id}: {reason}")
    assert not found.lost, found.lost
    assert not found.duplicated, found.duplicated
    assert all(reason for reason in found.failed.values())
    assert not found.problems, found.problems
    assert found.answered + len(found.failed) == len(ledger.accepted)

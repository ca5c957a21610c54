"""Faults of the orchestrator's own state while it runs: damage met by a request is a 503 that
says so, an `orchestrator.state_damaged` event and a problem `ps` lists, writes are refused and
reads that work keep working; a dead letter of an agent whose disk is full says so."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "broker"))

from broker_helpers import FLEET_YAML, build_services, write_fleet

from agent_runtime.protocol import CheckIn, ItemKind, RunOutcome, RunRecord
from orchestrator.alerts.rules import AlertEvaluator
from orchestrator.api.app import create_app
from orchestrator.api.state_damage import damage_ends_stream
from orchestrator.config.alerts import AlertsConfig
from orchestrator.events import Event, EventType
from orchestrator.services import Services
from orchestrator.state.check import is_state_damage
from orchestrator.testing.server import serve_app

PAGE = 4096


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    built = build_services(write_fleet(tmp_path / "fleet", FLEET_YAML))
    yield built
    built.db.close()


def _record_runs(services: Services, agent: str, count: int) -> None:
    now = datetime.now(UTC)
    for n in range(count):
        run = RunRecord(
            id=f"run-{n:05d}",
            agent=agent,
            trigger="operator",
            item_id=f"item-{n}",
            model="test",
            started_at=now,
            finished_at=now,
            outcome=RunOutcome.OK,
            detail="x" * 400,
        )
        services.scheduler.record_turn(run)


def _damage_the_runs_table(services: Services) -> None:
    """Overwrite the pages of the runs table's b-tree root, as a disk that lost them would."""
    services.db.truncate_wal()
    root = services.db.query_one("SELECT rootpage FROM sqlite_master WHERE name = 'runs'")
    assert root is not None
    with Path(str(services.db.path)).open("r+b") as file:
        file.seek((int(root["rootpage"]) - 1) * PAGE)
        file.write(b"\xa5" * PAGE)
    # The pages the connection holds in memory are let go, as a long-running orchestrator's cache
    # holds only some of them.
    services.db.execute("PRAGMA shrink_memory")


def test_damage_met_while_running_is_a_503_an_event_and_a_problem_and_reads_go_on(
    services: Services,
) -> None:
    _record_runs(services, "alpha", 300)
    _damage_the_runs_table(services)
    with serve_app(create_app(services)) as url:
        operator = httpx.Client(
            base_url=url, headers={"authorization": f"Bearer {services.operator_token}"}, timeout=10
        )
        runs = operator.get("/api/v1/runs", params={"agent": "alpha"})
        assert runs.status_code == 503, runs.text
        body = runs.json()
        assert body["error"] == "state_damaged" and str(services.paths.db) in body["message"]
        assert "flotilla restore" in body["message"] and "Traceback" not in runs.text

        sent = operator.post("/api/v1/agents/alpha/messages", json={"text": "hello"})
        assert sent.status_code == 503 and sent.json()["error"] == "state_damaged"

        status = operator.get("/api/v1/fleet")
        assert status.status_code == 200, status.text
        assert any("state.db" in problem and "damaged" in problem for problem in status.json()["problems"])
        events = operator.get("/api/v1/events/recent", params={"limit": 50})
        assert events.status_code == 200
        damaged = [e for e in events.json() if e["type"] == EventType.STATE_DAMAGED.value]
        assert len(damaged) == 1 and damaged[0]["data"]["path"] == str(services.paths.db)
        operator.close()


def test_a_dead_letter_of_an_agent_whose_disk_is_full_says_so(services: Services) -> None:
    services.health.record(
        "beta", CheckIn(state="idle", pid=1, uptime_s=1.0, disk_full=True, disk_free_bytes=4096)
    )
    poison = services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "never answered")
    attempts = services.fleet.config.limits.delivery_attempts
    for _ in range(attempts):
        claimed = asyncio.run(services.inbox.next("beta", 0))
        assert claimed is not None
        services.inbox.requeue_claimed("beta")

    assert asyncio.run(services.inbox.next("beta", 0)) is None
    result = services.inbox.result(poison.id)
    assert result is not None and result.error is not None
    assert f"dead-lettered after {attempts} deliveries" in result.error
    assert "the agent's disk is full (4096 bytes free)" in result.error
    (event,) = [e for e in services.events.recent(limit=100) if e.type == EventType.MESSAGE_DEAD_LETTERED]
    assert "disk is full" in event.data["error"]


def test_only_damage_counts_as_damage_not_a_constraint_or_a_bad_parameter(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "whole.db")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    conn.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(sqlite3.IntegrityError) as constraint:
        conn.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(sqlite3.ProgrammingError) as parameters:
        conn.execute("SELECT ?", (1, 2))
    conn.close()
    (tmp_path / "garbage.db").write_bytes(b"\x01" * 8192)
    with pytest.raises(sqlite3.DatabaseError) as not_a_database:
        sqlite3.connect(tmp_path / "garbage.db").execute("SELECT * FROM sqlite_master")

    assert not is_state_damage(constraint.value) and not is_state_damage(parameters.value)
    assert not is_state_damage(sqlite3.OperationalError("database is locked"))
    assert is_state_damage(not_a_database.value)


def test_an_event_rule_on_state_damaged_makes_an_alert_that_says_what_to_do() -> None:
    config = AlertsConfig.model_validate(
        {
            "webhooks": {"ops": {"url": "http://127.0.0.1:9/hook"}},
            "rules": [{"when": "event", "event": EventType.STATE_DAMAGED.value}],
        }
    )
    event = Event(
        type=EventType.STATE_DAMAGED.value,
        data={"path": "/srv/fleet/.flotilla/state.db", "problem": "database disk image is malformed"},
    )

    (firing,) = AlertEvaluator(config).on_event(event)

    assert firing.title == "orchestrator.state_damaged"
    assert "/srv/fleet/.flotilla/state.db is damaged (database disk image is malformed)" in firing.summary
    assert "restore the last backup" in firing.summary


def test_a_reply_stream_that_meets_damage_ends_with_an_error_event_that_says_so(services: Services) -> None:
    async def reply() -> AsyncIterator[str]:
        yield "event: queued\ndata: {}\n\n"
        raise sqlite3.DatabaseError("database disk image is malformed")

    async def read_all() -> list[str]:
        return [event async for event in damage_ends_stream(services, reply())]

    queued, error = asyncio.run(read_all())

    assert queued.startswith("event: queued")
    assert error.startswith("event: error\ndata: ")
    body = json.loads(error.removeprefix("event: error\ndata: "))
    assert body["error"] == "state_damaged" and "flotilla restore" in body["message"]
    assert services.db.damage == "database disk image is malformed"

"""Retention (fleet.yaml `limits.retention`) of what the orchestrator stores for agents, by age
and by size per agent, and the masking of delivered operator messages."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from broker_helpers import FLEET_YAML, build_services, write_fleet

from agent_runtime.protocol import ApprovalRequest, ItemKind, RunOutcome, RunRecord, TellRequest, WorkResult
from orchestrator.alerts import AlertStore
from orchestrator.approvals import ApprovalStore
from orchestrator.gateway.ledger import Charge
from orchestrator.services import Services

KIB = 1024
RETENTION = """\
limits:
  rates:
    tells: 10000/s
    pair: 10000/s
    intake: 10000/s
    pending: 10000
  retention:
    events: {age: 1d, size: 64k}
    messages: {age: 1d, size: 64k}
    inbox: {age: 1d, size: 64k}
    runs: {age: 1d, size: 64k}
secrets:
  deploy_key: {env: FAIRSHARE_TEST_DEPLOY_KEY}
"""
DEPLOY_KEY = "a-deploy-key-value-9d2f"


@pytest.fixture
def services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Services]:
    monkeypatch.setenv("FAIRSHARE_TEST_DEPLOY_KEY", DEPLOY_KEY)
    built = build_services(write_fleet(tmp_path / "fleet", FLEET_YAML + RETENTION))
    yield built
    built.db.close()


def test_an_agents_events_are_kept_under_its_size_and_age(services: Services) -> None:
    for n in range(200):
        services.events.publish("agent.reported", agent="alpha", n=n, blob="e" * 2000)
    services.events.publish("agent.reported", agent="beta", n=0)
    assert services.events.stored_bytes()["alpha"] > 300 * KIB
    report = services.retention.apply()
    assert report.events > 150
    assert services.events.stored_bytes()["alpha"] <= 64 * KIB
    kept = [e.data["n"] for e in services.events.recent(1000, agent="alpha")]
    assert kept == list(range(200 - len(kept), 200))  # the newest stay
    assert len(services.events.recent(10, agent="beta")) == 1
    later = services.retention
    later._now = lambda: datetime.now(UTC) + timedelta(days=2)  # a clock two days on
    later.apply()
    assert services.events.recent(1000, agent="alpha") == []


async def _flood(services: Services, count: int) -> None:
    for n in range(count):
        await services.broker.tell("alpha", TellRequest(to="beta", text=f"{n} " + "t" * 1000))


def test_finished_inbox_items_and_messages_are_pruned_but_waiting_ones_and_dead_letters_stay(
    services: Services,
) -> None:
    asyncio.run(_flood(services, 300))
    items = services.inbox.list("beta", limit=1000)
    for item in items[:290]:
        services.inbox.complete("beta", item.id, WorkResult(ok=True, text="done " + "r" * 500))
    services.db.execute("UPDATE inbox SET state = 'dead' WHERE id = ?", (items[290].id,))
    report = services.retention.apply()
    assert report.inbox > 0 and report.messages > 0
    assert services.inbox.stored_bytes()["beta"] <= 64 * KIB + 10 * 2 * KIB
    assert services.inbox.pending("beta") == 9 and services.inbox.dead_count("beta") == 1
    assert services.broker.messages.stored_bytes()["alpha"] <= 64 * KIB


def test_run_records_are_kept_under_their_size(services: Services) -> None:
    now = datetime.now(UTC)
    for n in range(300):
        services.scheduler.runs.add_turn(
            RunRecord(
                id=f"run-{n}",
                agent="alpha",
                trigger="operator",
                started_at=now,
                finished_at=now,
                outcome=RunOutcome.OK,
                detail="d" * 400,
            )
        )
    services.retention.apply()
    assert services.scheduler.runs.stored_bytes()["alpha"] <= 64 * KIB
    assert services.scheduler.runs.recent("alpha", limit=1)[0].id == "run-299"


def test_old_ledger_rows_are_rolled_up_by_day_and_the_spend_stays(services: Services) -> None:
    ledger = services.gateway.ledger
    old = datetime.now(UTC) - timedelta(days=70)
    with services.db.transaction() as conn:
        row = ledger.reserve(
            conn,
            at=old,
            agent="alpha",
            kind="chat",
            model="test",
            provider="test",
            estimate=Charge(10, 5, 0.25),
        )
    ledger.settle(row, model="test", provider="test", charge=Charge(10, 5, 0.25), status="ok", latency_ms=5)
    start, end = old.replace(hour=0, minute=0, second=0, microsecond=0), old + timedelta(days=1)
    before = ledger.spend(services.db, "alpha", start, end)
    assert before.usd == pytest.approx(0.25)
    report = services.retention.apply()
    assert report.usage_detail == 1 and ledger.rows("alpha") == []
    ledger.recover()  # what a restart does: the rollup of pruned days is not rebuilt away
    assert ledger.spend(services.db, "alpha", start, end).usd == pytest.approx(0.25)


def test_a_delivered_operator_message_keeps_no_credential(services: Services) -> None:
    text = f"deploy with {DEPLOY_KEY}; the db password: hunter2!x and sk-live1234567890abcdefXYZ"
    item = services.inbox.submit("alpha", ItemKind.OPERATOR_MESSAGE, "operator", text)
    waiting = services.inbox.get(item.id)
    assert waiting is not None and DEPLOY_KEY not in waiting.text  # masked before its first write
    services.inbox.complete("alpha", item.id, WorkResult(ok=True, text="used password: hunter2!x"))
    stored = services.inbox.get(item.id)
    assert stored is not None
    for secret in (DEPLOY_KEY, "hunter2!x", "sk-live1234567890abcdefXYZ"):
        assert secret not in stored.text
        assert secret not in (services.inbox.result(item.id) or WorkResult(ok=True)).text
    assert "{{secret:deploy_key}}" in stored.text and "[REDACTED" in stored.text


def test_the_masked_text_leaves_no_copy_in_the_database_file(services: Services) -> None:
    secret = "correct-horse-" + "Zq8" * 600  # long enough to need pages of its own
    item = services.inbox.submit("alpha", ItemKind.OPERATOR_MESSAGE, "operator", f"the password: {secret}")
    services.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    services.inbox.complete("alpha", item.id, WorkResult(ok=True, text="noted"))
    services.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert secret.encode() not in Path(str(services.db.path)).read_bytes()
    assert b"correct-horse-Zq8" not in Path(str(services.db.path)).read_bytes()


def test_alerts_sent_or_given_up_are_kept_as_long_as_events(services: Services) -> None:
    store = AlertStore(services.db)
    old = datetime.now(UTC) - timedelta(days=3)
    for key in ("sent", "pending"):
        store.record(
            key=key,
            webhook="w",
            title=key,
            agent="alpha",
            summary="",
            payload={},
            now=old,
            repeat_after=timedelta(minutes=5),
        )
    sent = next(alert for alert in store.recent() if alert.key == "sent")
    store.mark_sent(sent.id, old)
    assert services.retention.apply().alerts == 1  # events are kept 1d here
    assert [alert.key for alert in store.recent()] == ["pending"]


def test_decided_approval_items_are_kept_as_long_as_events_and_pending_ones_stay(
    services: Services,
) -> None:
    store = ApprovalStore(services.db, services.events)
    for key in ("decided-long-ago", "decided-today", "still-pending"):
        store.request("alpha", ApprovalRequest(key=key, tool="http_request", timeout_s=3600))
    for key in ("decided-long-ago", "decided-today"):
        found = store.find("alpha", key)
        assert found is not None
        store.decide(found.id, "approved")
    services.db.execute(
        "UPDATE approvals SET decided_at = ? WHERE key = 'decided-long-ago'",
        ((datetime.now(UTC) - timedelta(days=3)).isoformat(),),
    )
    assert services.retention.apply().approvals == 1  # events are kept 1d here
    assert {item.state for item in store.list()} == {"approved", "pending"}
    assert store.find("alpha", "decided-long-ago") is None

"""Budgets enforced in the gateway: atomic reservation, 429 JSON, windows, events, restarts."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import openai
import pytest
from gateway_harness import Clock, Launch

from orchestrator.events import EventType
from orchestrator.gateway.budget import BudgetExhausted
from orchestrator.gateway.ledger import Charge
from orchestrator.gateway.service import Gateway

HI = [{"role": "user", "content": "hi"}]


def _events(orch: object, kind: EventType) -> list[object]:
    return [e for e in orch.services.events.recent(500) if e.type == kind]  # type: ignore[attr-defined]


def _spend_until_refused(client: openai.OpenAI, limit_calls: int = 50) -> openai.RateLimitError:
    for _ in range(limit_calls):
        try:
            client.chat.completions.create(model="test", messages=HI, max_tokens=20)  # type: ignore[arg-type]
        except openai.RateLimitError as exc:
            return exc
    raise AssertionError("the budget never ran out")


def test_exhausted_budget_is_429_with_a_clear_json_body(launch: Launch) -> None:
    orch = launch("""\
    agents:
      alice:
        budget: {daily_tokens: 200}
      bob: {}
    """)
    refused = _spend_until_refused(orch.client("alice"))
    assert refused.status_code == 429
    assert refused.response.headers["x-should-retry"] == "false"
    body = refused.response.json()
    assert body["error"]["code"] == "budget_exhausted"
    message = body["error"]["message"]
    assert "daily_tokens" in message and "agent 'alice'" in message
    assert "of 200 tokens" in message and "resets at 2030-05-18T00:00:00Z" in message
    assert "budget: daily_tokens" in body["error"]["details"] and "limit: 200" in body["error"]["details"]
    details = dict(d.split(": ", 1) for d in body["error"]["details"])
    assert float(details["spent"]) + float(details["needed"]) > 200
    assert float(details["spent"]) == orch.gateway.budget_status("alice").windows[0].spent
    assert len(_events(orch, EventType.BUDGET_EXHAUSTED)) == 1
    # bob has no budget of his own and is not affected
    bob = orch.client("bob").chat.completions.create(model="test", messages=HI)  # type: ignore[arg-type]
    assert bob.choices[0].message.content


def test_the_token_decides_whose_budget_is_spent(launch: Launch) -> None:
    orch = launch("""\
    agents:
      alice:
        budget: {daily_tokens: 150}
      bob:
        budget: {daily_tokens: 150}
    """)
    alice = orch.client("alice", default_headers={"x-flotilla-agent": "bob"})
    with pytest.raises(openai.RateLimitError):
        for _ in range(20):
            alice.chat.completions.create(model="test", messages=HI, user="bob", max_tokens=20)  # type: ignore[arg-type]
    assert {row.agent for row in orch.gateway.ledger.rows()} == {"alice"}
    assert orch.gateway.budget_status("bob").windows[0].spent == 0
    reply = orch.client("bob").chat.completions.create(model="test", messages=HI, max_tokens=20)  # type: ignore[arg-type]
    assert reply.choices[0].message.content


def test_concurrent_calls_cannot_both_slip_under_the_limit(launch: Launch) -> None:
    # Each call reserves about 110 tokens (prompt + max_tokens=100); the cap fits one.
    orch = launch("""\
    agents:
      alice:
        model: fake:fake-model
        budget: {daily_tokens: 150}
    """)
    orch.upstream.hold()
    client = orch.client("alice")

    def call() -> str:
        try:
            client.chat.completions.create(model="fake:fake-model", messages=HI, max_tokens=100)  # type: ignore[arg-type]
        except openai.RateLimitError as exc:
            return exc.response.json()["error"]["code"]
        return "ok"

    with ThreadPoolExecutor(max_workers=6) as pool:
        futures = [pool.submit(call) for _ in range(6)]
        assert orch.upstream.wait_for_requests(1)
        finished = _wait_finished(futures, 5)
        # Five calls were refused while the admitted one was still held upstream.
        assert [f.result() for f in finished] == ["budget_exhausted"] * 5
        assert len(orch.upstream.chat_requests()) == 1
        orch.upstream.release()
        results = sorted(f.result() for f in futures)
    assert results == ["budget_exhausted"] * 5 + ["ok"]
    rows = orch.gateway.ledger.rows("alice")
    assert [r.status for r in rows] == ["ok"]


def _wait_finished(futures: list[Future[str]], count: int) -> list[Future[str]]:
    deadline = time.monotonic() + 20
    while sum(f.done() for f in futures) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    return [f for f in futures if f.done()]


def test_reservations_are_atomic_across_threads(launch: Launch) -> None:
    orch = launch("""\
    agents:
      alice:
        budget: {daily_tokens: 55}
    """)
    budgets = orch.gateway.budgets
    start = threading.Barrier(16)
    outcomes: list[str] = []
    lock = threading.Lock()

    def reserve() -> None:
        start.wait()
        try:
            budgets.reserve("alice", kind="chat", model="test", provider="test", estimate=Charge(10, 0, 0.0))
            result = "reserved"
        except BudgetExhausted:
            result = "refused"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=reserve) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count("reserved") == 5 and outcomes.count("refused") == 11
    assert orch.gateway.budget_status("alice").windows[0].spent == 50


def test_warning_at_80_percent_once_per_window(launch: Launch) -> None:
    orch = launch("""\
    agents:
      alice:
        budget: {daily_tokens: 400, monthly_tokens: 100000}
    """)
    client = orch.client("alice")
    while orch.gateway.budget_status("alice").windows[0].fraction < 0.8:
        client.chat.completions.create(model="test", messages=HI, max_tokens=10)  # type: ignore[arg-type]
    warnings = _events(orch, EventType.BUDGET_WARNING)
    assert len(warnings) == 1
    assert warnings[0].agent == "alice" and warnings[0].data["kind"] == "daily_tokens"  # type: ignore[attr-defined]
    client.chat.completions.create(model="test", messages=HI, max_tokens=10)  # type: ignore[arg-type]
    assert len(_events(orch, EventType.BUDGET_WARNING)) == 1
    _spend_until_refused(client)
    _spend_until_refused(client)
    exhausted = _events(orch, EventType.BUDGET_EXHAUSTED)
    assert len(exhausted) == 1  # once per window, however often it refuses
    assert exhausted[0].data["kind"] == "daily_tokens"  # type: ignore[attr-defined]


def test_windows_reset_at_utc_midnight_and_month_start(launch: Launch) -> None:
    clock = Clock(datetime(2030, 5, 31, 23, 30, tzinfo=UTC))
    orch = launch(
        """\
    agents:
      alice:
        budget: {daily_tokens: 150, monthly_tokens: 400}
    """,
        clock=clock,
    )
    client = orch.client("alice")
    refused = _spend_until_refused(client)
    assert "daily_tokens" in refused.response.json()["error"]["message"]
    assert "resets at 2030-06-01T00:00:00Z" in refused.response.json()["error"]["message"]
    clock.now = datetime(2030, 5, 31, 23, 59, tzinfo=UTC)
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="test", messages=HI, max_tokens=20)  # type: ignore[arg-type]
    clock.now = datetime(2030, 6, 1, 0, 0, tzinfo=UTC)  # new day and new month
    assert orch.gateway.can_spend("alice")
    assert all(w.spent == 0 for w in orch.gateway.budget_status("alice").windows)
    client.chat.completions.create(model="test", messages=HI, max_tokens=20)  # type: ignore[arg-type]


def test_monthly_budget_outlives_the_day(launch: Launch) -> None:
    clock = Clock(datetime(2030, 5, 10, 12, 0, tzinfo=UTC))
    orch = launch(
        """\
    agents:
      alice:
        budget: {monthly_tokens: 150}
    """,
        clock=clock,
    )
    client = orch.client("alice")
    _spend_until_refused(client)
    clock.now += timedelta(days=1)
    refused = _spend_until_refused(client)
    assert "monthly_tokens" in refused.response.json()["error"]["message"]
    assert "resets at 2030-06-01T00:00:00Z" in refused.response.json()["error"]["message"]


def test_dollar_budget_with_the_test_model_price(launch: Launch) -> None:
    # The test model costs $1 per million tokens: $0.0002 buys about 200 tokens.
    orch = launch("""\
    agents:
      alice:
        budget: {daily_usd: 0.0002}
    """)
    refused = _spend_until_refused(orch.client("alice"))
    assert "daily_usd" in refused.response.json()["error"]["message"]
    status = orch.gateway.budget_status("alice")
    assert 0 < status.windows[0].spent <= 0.0002


def test_fleet_wide_budget_covers_every_agent(launch: Launch) -> None:
    orch = launch("""\
    budget: {daily_tokens: 300}
    agents:
      alice: {}
      bob: {}
    """)
    alice, bob = orch.client("alice"), orch.client("bob")
    with pytest.raises(openai.RateLimitError) as caught:
        for _ in range(30):
            alice.chat.completions.create(model="test", messages=HI, max_tokens=20)  # type: ignore[arg-type]
            bob.chat.completions.create(model="test", messages=HI, max_tokens=20)  # type: ignore[arg-type]
    body = caught.value.response.json()
    assert "the fleet" in body["error"]["message"] and "scope: fleet" in body["error"]["details"]
    assert {row.agent for row in orch.gateway.ledger.rows()} == {"alice", "bob"}
    fleet_window = next(w for w in orch.gateway.budget_status("bob").windows if w.scope == "fleet")
    total = sum(r.tokens_in + r.tokens_out for r in orch.gateway.ledger.rows())
    assert fleet_window.spent == total <= 300


def test_budget_state_survives_a_restart(launch: Launch) -> None:
    orch = launch("""\
    agents:
      alice:
        budget: {daily_tokens: 150}
      bob:
        budget: {daily_tokens: 1000}
    """)
    _spend_until_refused(orch.client("alice"))
    spent = orch.gateway.budget_status("alice").windows[0].spent
    assert spent > 0
    # A call in flight when the process died leaves its reservation behind.
    orch.gateway.budgets.reserve("bob", kind="chat", model="test", provider="test", estimate=Charge(7, 0))
    rollup_query = "SELECT subject, day, usd, tokens, calls FROM gateway_spend_daily ORDER BY subject, day"
    kept_in_step = [tuple(r) for r in orch.services.db.query(rollup_query)]
    restarted = Gateway(
        orch.services.db,
        orch.services.fleet_view,
        orch.services.controls,
        orch.services.events,
        clock=orch.clock,
    )
    rebuilt = [tuple(r) for r in orch.services.db.query(rollup_query)]
    assert [r[:2] + r[3:] for r in rebuilt] == [r[:2] + r[3:] for r in kept_in_step]
    assert [r[2] for r in rebuilt] == pytest.approx([r[2] for r in kept_in_step])
    assert restarted.budget_status("alice").windows[0].spent == spent
    assert restarted.budget_status("bob").windows[0].spent == 7  # charged at its estimate
    [interrupted] = restarted.ledger.rows("bob")
    assert interrupted.status == "interrupted" and interrupted.estimated


def test_scheduler_facing_status(launch: Launch) -> None:
    orch = launch("""\
    budget: {monthly_usd: 10}
    agents:
      alice:
        budget: {daily_usd: 1, daily_tokens: 1000}
      bob: {}
    """)
    status = orch.gateway.budget_status("alice")
    assert [(w.scope, w.kind) for w in status.windows] == [
        ("agent", "daily_usd"),
        ("agent", "daily_tokens"),
        ("fleet", "monthly_usd"),
    ]
    assert status.can_spend and orch.gateway.can_spend("bob")
    assert status.windows[0].resets_at == datetime(2030, 5, 18, tzinfo=UTC)
    assert status.windows[2].resets_at == datetime(2030, 6, 1, tzinfo=UTC)


def test_a_streamed_request_over_budget_is_refused_before_streaming(launch: Launch) -> None:
    orch = launch("""\
    agents:
      alice:
        budget: {daily_tokens: 10}
    """)
    body = {"model": "test", "messages": HI, "stream": True}
    response = orch.http(orch.tokens["alice"]).post("/v1/chat/completions", json=body)
    assert response.status_code == 429
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["code"] == "budget_exhausted"
    assert orch.gateway.ledger.rows("alice") == []

"""Alerts: rules on events, delivered over real HTTP to a webhook receiver on loopback,
retried with backoff, de-duplicated, recorded, and not repeated after a restart."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from orchestrator.alerts import AlertDispatcher, AlertStore
from orchestrator.alerts.dispatcher import backoff_s
from orchestrator.config.alerts import AlertsConfig
from orchestrator.config.models import FleetConfig
from orchestrator.events import EventBus, EventType
from orchestrator.state.db import Database


class Receiver:
    """A webhook endpoint on 127.0.0.1 that records what it gets and answers scripted statuses."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.statuses: list[int] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    yield server
    server.close()


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class Rig:
    def __init__(self, tmp_path: Path, config: AlertsConfig, clock: Clock) -> None:
        self.db = Database(tmp_path / "state.db")
        self.events = EventBus(self.db)
        self.store = AlertStore(self.db)
        self.clock = clock
        self.healthy: set[str] = set()
        self.config = config
        self.dispatcher = self.new_dispatcher()

    def new_dispatcher(self) -> AlertDispatcher:
        dispatcher = AlertDispatcher(
            lambda: self.config,
            "harbour",
            self.events,
            self.store,
            lambda agent: agent in self.healthy,
            clock=self.clock,
        )
        dispatcher.start_position()
        return dispatcher

    def publish(
        self, type_: EventType | str, agent: str | None, at: datetime | None = None, **data: Any
    ) -> None:
        event = self.events.publish(type_, agent=agent, **data)
        if at is not None:  # events carry their own time; tests that need a past time rewrite it
            self.db.execute("UPDATE events SET at = ? WHERE seq = ?", (at.isoformat(), event.seq))


def _config(url: str, *rules: dict[str, Any], **extra: Any) -> AlertsConfig:
    return AlertsConfig.model_validate({"webhooks": {"ops": {"url": url}}, "rules": list(rules), **extra})


def test_budget_warning_reaches_the_webhook_as_json(tmp_path: Path, receiver: Receiver) -> None:
    rig = Rig(tmp_path, _config(receiver.url, {"when": "budget_warning"}), Clock())
    rig.publish(EventType.BUDGET_WARNING, "pilot", scope="agent", kind="daily_usd", fraction=0.8)
    rig.publish(EventType.HEARTBEAT_IDLE, "pilot")  # no rule: no alert
    rig.dispatcher.step()
    assert len(receiver.received) == 1
    headers, body = receiver.received[0]
    assert headers["content-type"] == "application/json"
    assert body["fleet"] == "harbour"
    assert body["alert"] == "budget_warning"
    assert body["agent"] == "pilot"
    assert "80% of its daily_usd budget" in body["summary"]
    (record,) = rig.store.recent()
    assert record.status == "sent" and record.attempts == 1


def test_history_before_the_first_start_raises_nothing(tmp_path: Path, receiver: Receiver) -> None:
    db_events = EventBus(Database(tmp_path / "state.db"))
    db_events.publish(
        EventType.BUDGET_EXHAUSTED, agent="pilot", scope="agent", kind="daily_usd", fraction=1.0
    )
    rig = Rig(tmp_path, _config(receiver.url, {"when": "budget_exhausted"}), Clock())
    rig.dispatcher.step()
    assert receiver.received == []
    rig.publish(EventType.BUDGET_EXHAUSTED, "pilot", scope="agent", kind="daily_usd", fraction=1.0)
    rig.dispatcher.step()
    assert len(receiver.received) == 1


def test_slack_format_and_headers_from_the_host_environment(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPS_HOOK_TOKEN", "Bearer s3cret")
    config = AlertsConfig.model_validate(
        {
            "webhooks": {
                "slack": {
                    "url": receiver.url,
                    "format": "slack",
                    "headers_env": {"Authorization": "OPS_HOOK_TOKEN"},
                }
            },
            "rules": [{"when": "event", "event": "agent.stopped", "name": "stopped"}],
        }
    )
    rig = Rig(tmp_path, config, Clock())
    rig.publish(EventType.AGENT_STOPPED, "clerk")
    rig.dispatcher.step()
    ((headers, body),) = receiver.received
    assert headers["authorization"] == "Bearer s3cret"
    assert body == {"text": ":rotating_light: [harbour] stopped (clerk): agent.stopped for clerk"}


def test_a_failing_webhook_is_retried_with_backoff_then_succeeds(tmp_path: Path, receiver: Receiver) -> None:
    clock = Clock()
    rig = Rig(tmp_path, _config(receiver.url, {"when": "dead_letter"}), clock)
    receiver.statuses = [500, 503]
    rig.publish("message.dead_lettered", "clerk", attempts=5)
    rig.dispatcher.step()
    (record,) = rig.store.recent()
    assert (record.status, record.attempts) == ("pending", 1)
    assert "HTTP 500" in (record.last_error or "")
    rig.dispatcher.step()  # not due yet: no second request
    assert len(receiver.received) == 1
    clock.advance(backoff_s(1))
    rig.dispatcher.step()
    clock.advance(backoff_s(2))
    rig.dispatcher.step()
    assert len(receiver.received) == 3
    (record,) = rig.store.recent()
    assert (record.status, record.attempts) == ("sent", 3)
    assert "dead-lettered after 5 attempts" in record.summary


def test_an_unreachable_webhook_fails_for_good_after_max_attempts(tmp_path: Path, receiver: Receiver) -> None:
    clock = Clock()
    url = receiver.url
    receiver.close()  # nothing listens there any more
    rig = Rig(tmp_path, _config(url, {"when": "budget_exhausted"}, max_attempts=2), clock)
    rig.publish(EventType.BUDGET_EXHAUSTED, "pilot", scope="agent", kind="daily_usd", fraction=1.0)
    for _ in range(4):
        rig.dispatcher.step()
        clock.advance(60)
    (record,) = rig.store.recent()
    assert (record.status, record.attempts) == ("failed", 2)
    assert "Connect" in (record.last_error or "")


def test_the_same_alert_is_deduplicated_within_repeat_after(tmp_path: Path, receiver: Receiver) -> None:
    clock = Clock()
    rig = Rig(tmp_path, _config(receiver.url, {"when": "budget_warning"}, repeat_after="1h"), clock)
    for _ in range(3):
        rig.publish(EventType.BUDGET_WARNING, "pilot", scope="agent", kind="daily_usd", fraction=0.8)
    rig.publish(EventType.BUDGET_WARNING, "clerk", scope="agent", kind="daily_usd", fraction=0.8)
    rig.dispatcher.step()
    assert sorted(body["agent"] for _, body in receiver.received) == ["clerk", "pilot"]
    pilot = next(r for r in rig.store.recent() if r.agent == "pilot")
    assert pilot.repeats == 2
    clock.advance(3601)
    rig.publish(EventType.BUDGET_WARNING, "pilot", scope="agent", kind="daily_usd", fraction=0.8)
    rig.dispatcher.step()
    assert len(receiver.received) == 3


def test_a_crash_loop_needs_enough_restarts_inside_the_window(tmp_path: Path, receiver: Receiver) -> None:
    rule = {"when": "crash_loop", "restarts": 3, "within": "10m"}
    rig = Rig(tmp_path, _config(receiver.url, rule), Clock())
    start = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    # Three restarts spread over 30 minutes: not a loop.
    for minutes in (0, 15, 30):
        rig.publish(EventType.AGENT_RESTARTED, "pilot", at=start + timedelta(minutes=minutes))
    rig.dispatcher.step()
    assert receiver.received == []
    # Two more within a few minutes of the last: three inside ten minutes.
    for minutes in (33, 36):
        rig.publish(EventType.AGENT_RESTARTED, "pilot", at=start + timedelta(minutes=minutes))
    rig.dispatcher.step()
    ((_, body),) = receiver.received
    assert body["alert"] == "crash_loop"
    assert body["summary"] == "pilot restarted 3 times within 10m"


def test_unhealthy_fires_only_when_the_agent_stays_silent_for_the_duration(
    tmp_path: Path, receiver: Receiver
) -> None:
    clock = Clock()
    rig = Rig(tmp_path, _config(receiver.url, {"when": "unhealthy", "for": "5m", "agents": ["pilot"]}), clock)
    rig.publish(EventType.AGENT_UNHEALTHY, "pilot", at=clock.now, reason="no check-in")
    rig.publish(EventType.AGENT_UNHEALTHY, "clerk", at=clock.now, reason="no check-in")  # not in the rule
    rig.dispatcher.step()
    clock.advance(240)
    rig.dispatcher.step()
    assert receiver.received == []
    clock.advance(61)
    rig.dispatcher.step()
    ((_, body),) = receiver.received
    assert body["agent"] == "pilot"
    assert body["summary"] == "pilot has not checked in for 5 min"
    assert body["status"] == "firing"
    # Recovers: told once, as resolved. Goes silent again: a new episode needs another five minutes.
    rig.healthy.add("pilot")
    rig.dispatcher.step()
    rig.dispatcher.step()
    assert len(receiver.received) == 2
    _, resolved = receiver.received[1]
    assert resolved["status"] == "resolved" and resolved["agent"] == "pilot"
    assert resolved["summary"] == "pilot checks in again (after 5 min)"
    rig.healthy.clear()
    rig.publish(EventType.AGENT_UNHEALTHY, "pilot", at=clock.now, reason="no check-in")
    clock.advance(60)
    rig.dispatcher.step()
    assert len(receiver.received) == 2


def test_a_warning_rule_alone_fires_when_spend_jumps_past_the_whole_budget(
    tmp_path: Path, receiver: Receiver
) -> None:
    rig = Rig(tmp_path, _config(receiver.url, {"when": "budget_warning"}), Clock())
    rig.publish(EventType.BUDGET_EXHAUSTED, "pilot", scope="agent", kind="daily_usd", fraction=1.4)
    rig.dispatcher.step()
    ((_, body),) = receiver.received
    assert body["alert"] == "budget_warning" and "140% of its daily_usd budget" in body["summary"]


def test_a_restarted_dispatcher_neither_repeats_nor_misses(tmp_path: Path, receiver: Receiver) -> None:
    clock = Clock()
    rig = Rig(tmp_path, _config(receiver.url, {"when": "budget_exhausted"}), clock)
    rig.publish(EventType.BUDGET_EXHAUSTED, "pilot", scope="agent", kind="daily_usd", fraction=1.0)
    rig.dispatcher.step()
    # The orchestrator stops; an event arrives while it is down; it starts again.
    rig.publish(EventType.BUDGET_EXHAUSTED, "clerk", scope="agent", kind="daily_usd", fraction=1.0)
    rig.dispatcher = rig.new_dispatcher()
    rig.dispatcher.step()
    assert [body["agent"] for _, body in receiver.received] == ["pilot", "clerk"]


def test_a_changed_config_is_followed(tmp_path: Path, receiver: Receiver) -> None:
    rig = Rig(tmp_path, _config(receiver.url, {"when": "budget_warning"}), Clock())
    rig.config = _config(receiver.url, {"when": "event", "event": "agent.stopped"})
    rig.publish(EventType.BUDGET_WARNING, "pilot", scope="agent", kind="daily_usd", fraction=0.8)
    rig.publish(EventType.AGENT_STOPPED, "pilot")
    rig.dispatcher.step()
    assert [body["alert"] for _, body in receiver.received] == ["agent.stopped"]


@pytest.mark.parametrize(
    ("alerts", "message"),
    [
        ({"rules": [{"when": "budget_warning"}]}, "need at least one webhook"),
        ({"webhooks": {"a": {"url": "http://127.0.0.1:1/x"}}, "rules": [{"when": "event"}]}, "needs `event`"),
        (
            {
                "webhooks": {"a": {"url": "http://127.0.0.1:1/x"}},
                "rules": [{"when": "dead_letter", "to": ["b"]}],
            },
            "unknown webhooks: b",
        ),
        ({"webhooks": {"a": {"url": "ftp://x"}}}, "must start with http"),
        ({"webhooks": {"a": {"url": "http://h/x", "headers_env": {"X": "not a name"}}}}, "not environment"),
        (
            {"webhooks": {"a": {"url": "http://h/x"}}, "rules": [{"when": "crash_loop", "within": "soon"}]},
            "invalid duration",
        ),
        (
            {"webhooks": {"a": {"url": "http://h/x"}}, "rules": [{"when": "unhealthy", "agents": ["ghost"]}]},
            "unknown agents: ghost",
        ),
    ],
)
def test_bad_alert_config_is_refused_with_the_reason(alerts: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        FleetConfig.model_validate({"fleet": "harbour", "agents": {"pilot": {}}, "alerts": alerts})


def test_a_crash_loop_is_resolved_once_the_window_passes_without_enough_restarts(
    tmp_path: Path, receiver: Receiver
) -> None:
    clock = Clock()
    rule = {"when": "crash_loop", "restarts": 3, "within": "10m"}
    rig = Rig(tmp_path, _config(receiver.url, rule), clock)
    for _ in range(3):
        rig.publish(EventType.AGENT_RESTARTED, "pilot", at=clock.now, reason="exited")
        clock.advance(60)
    rig.dispatcher.step()
    ((_, firing),) = receiver.received
    assert firing["status"] == "firing" and firing["summary"] == "pilot restarted 3 times within 10m"
    clock.advance(5 * 60)
    rig.dispatcher.step()
    assert len(receiver.received) == 1  # the restarts are still inside the window
    clock.advance(6 * 60)
    rig.dispatcher.step()
    _, resolved = receiver.received[1]
    assert resolved["status"] == "resolved" and resolved["agent"] == "pilot"
    rig.dispatcher.step()
    assert len(receiver.received) == 2

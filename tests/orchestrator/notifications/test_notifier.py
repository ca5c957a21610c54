"""The notifier's policy and bookkeeping, with a recording stand-in for the services: which agent
may use which channel, how often, when a failure is retried, and what is kept."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from orchestrator.config.channels import ChannelConfig, WebhookChannel
from orchestrator.config.loader import load_fleet
from orchestrator.events import EventBus
from orchestrator.fleet.view import FleetView
from orchestrator.notifications import NotificationRefused, Notifier
from orchestrator.notifications.message import Notification, SendFailed
from orchestrator.scheduler.runs import RunStore
from orchestrator.state.db import Database

FLEET = """\
version: 1
fleet: notes
secrets:
  relay_key: {env: RELAY_KEY}
channels:
  relay: {type: webhook, url: "http://127.0.0.1:9/in?key={{secret:relay_key}}", max_per_hour: 2, attempts: 3}
  quiet: {type: webhook, url: "http://127.0.0.1:9/quiet"}
agents:
  writer:
    model: test
    channels: [relay]
  reader:
    model: test
"""


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


class Service:
    """Records each send; fails the first `failures` of them, quoting the URL it was given."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.sent: list[tuple[ChannelConfig, Notification]] = []

    async def __call__(self, channel: ChannelConfig, message: Notification) -> None:
        self.sent.append((channel, message))
        if len(self.sent) <= self.failures:
            assert isinstance(channel, WebhookChannel)
            raise SendFailed(f"HTTP 502 from {channel.url}")


def notifier_for(tmp_path: Path, service: Service, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Notifier:
    monkeypatch.setenv("RELAY_KEY", "k-0123456789abcdef")
    (tmp_path / "fleet.yaml").write_text(FLEET)
    db = Database(tmp_path / "state.db")
    return Notifier(
        FleetView(load_fleet(tmp_path / "fleet.yaml")), db, EventBus(db), clock=clock, send=service
    )


def test_only_the_channels_listed_for_an_agent_at_their_rate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock, service = Clock(), Service()
    notifier = notifier_for(tmp_path, service, clock, monkeypatch)
    with pytest.raises(NotificationRefused, match="'quiet' is not listed for agent writer"):
        asyncio.run(notifier.notify("writer", "quiet", "hello"))
    with pytest.raises(NotificationRefused, match=r"agents.reader.channels: none"):
        asyncio.run(notifier.notify("reader", "relay", "hello"))
    for text in ("one", "two"):
        assert asyncio.run(notifier.notify("writer", "relay", text)).status == "sent"
    with pytest.raises(NotificationRefused, match=r"at most 2 notifications an hour .* next one in 3600s"):
        asyncio.run(notifier.notify("writer", "relay", "three"))
    clock.now += timedelta(hours=1, seconds=1)
    assert asyncio.run(notifier.notify("writer", "relay", "three")).status == "sent"
    assert [message.text for _, message in service.sent] == ["one", "two", "three"]


def test_secrets_are_filled_in_for_the_send_and_redacted_from_what_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock, service = Clock(), Service(failures=3)
    notifier = notifier_for(tmp_path, service, clock, monkeypatch)
    record = asyncio.run(notifier.notify("writer", "relay", "disk full"))
    channel, _ = service.sent[0]
    assert isinstance(channel, WebhookChannel) and channel.url.endswith("key=k-0123456789abcdef")
    assert record.status == "retrying" and record.last_error == (
        "HTTP 502 from http://127.0.0.1:9/in?key={{secret:relay_key}}"
    )
    # Retried after 2 s, then 4 s; the third failure is the last attempt.
    clock.now += timedelta(seconds=1)
    asyncio.run(notifier.step())
    assert len(service.sent) == 1
    clock.now += timedelta(seconds=1)
    asyncio.run(notifier.step())
    clock.now += timedelta(seconds=4)
    asyncio.run(notifier.step())
    final = notifier.store.get(record.id)
    assert final is not None and (final.status, final.attempts) == ("failed", 3)
    runs = RunStore(Database(tmp_path / "state.db")).recent("writer", kind="notify")
    assert [(r.trigger, r.outcome) for r in runs] == [("tool", "failed")]
    assert "k-0123456789abcdef" not in runs[0].detail and "{{secret:relay_key}}" in runs[0].detail


def test_a_rule_notification_is_queued_then_sent_by_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock, service = Clock(), Service()
    notifier = notifier_for(tmp_path, service, clock, monkeypatch)
    assert notifier.queue_rule("reader", "relay", "hi") is not None
    assert notifier.queue_rule("writer", "relay", "stand-up in five minutes") is None
    assert service.sent == []
    asyncio.run(notifier.step())
    assert [message.text for _, message in service.sent] == ["stand-up in five minutes"]


def test_ended_notifications_are_kept_thirty_days(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock, service = Clock(), Service()
    notifier = notifier_for(tmp_path, service, clock, monkeypatch)
    old = asyncio.run(notifier.notify("writer", "relay", "old news"))
    clock.now += timedelta(days=31)
    recent = asyncio.run(notifier.notify("writer", "relay", "fresh"))
    asyncio.run(notifier.step())
    assert notifier.store.get(old.id) is None and notifier.store.get(recent.id) is not None

"""Sending notifications: the channel's policy (which agents, how often), the send itself with the
channel's secrets filled in at that moment, retries with backoff, and the record of each one.

A notification asked by an agent's `notify` tool is tried at once and the agent learns how that
went; one asked by a heartbeat rule is queued by the scheduler's thread and sent by `run`. A
failed attempt is retried after 2, 4, 8... seconds (at most five minutes) until the channel's
`attempts` are spent; then `notification.failed` is published, which an alert rule
(`when: notification_failed`) delivers. Each notification ends as a run record (kind `notify`)
and an event; the text and the records never hold a secret's value. The log keeps ended
notifications for 30 days.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from pydantic import TypeAdapter, ValidationError

from agent_runtime.protocol import utcnow
from orchestrator.config.channels import (
    AppriseChannel,
    ChannelConfig,
    ChatChannelBase,
    EmailChannel,
    NotifyChannel,
    SlackChannel,
    TelegramChannel,
    WebhookChannel,
)
from orchestrator.events import EventBus
from orchestrator.fleet.view import FleetView
from orchestrator.loop_calls import call_in_loop
from orchestrator.notifications.apprise_send import send_with_apprise
from orchestrator.notifications.message import Notification, SendFailed
from orchestrator.notifications.smtp import send_email
from orchestrator.notifications.store import NotificationRecord, NotificationStore, Origin
from orchestrator.notifications.webhook import WebhookSender
from orchestrator.scheduler.runs import RunStore
from orchestrator.secrets import SecretError, SecretStore
from orchestrator.state.db import Database

log = logging.getLogger(__name__)

SENT_EVENT = "notification.sent"
RETRYING_EVENT = "notification.retrying"
FAILED_EVENT = "notification.failed"
MAX_BACKOFF_S = 300.0
POLL_S = 1.0
RATE_WINDOW = timedelta(hours=1)
# Ended notifications are kept this long (their run records and events stay with theirs).
RETENTION = timedelta(days=30)
PRUNE_EVERY = timedelta(hours=1)
_CHANNEL = TypeAdapter[ChannelConfig](ChannelConfig)


def backoff_s(attempts: int) -> float:
    """After the n-th failed attempt: 2, 4, 8... seconds, capped at five minutes."""
    return float(min(2.0**attempts, MAX_BACKOFF_S))


class NotificationRefused(Exception):
    """The agent may not send this (channel not listed for it, over its rate, text too long);
    the message names the rule."""


class ChannelSenders:
    """Sends one notification with the sender of its channel's type."""

    def __init__(self) -> None:
        self._webhooks = WebhookSender()

    async def __call__(self, channel: ChannelConfig, message: Notification) -> None:
        if isinstance(channel, WebhookChannel):
            await self._webhooks.send(channel, message)
        elif isinstance(channel, EmailChannel):
            await send_email(channel, message)
        elif isinstance(channel, SlackChannel | TelegramChannel | AppriseChannel):
            await send_with_apprise(channel, message)

    async def aclose(self) -> None:
        await self._webhooks.aclose()


def _filled(value: Any, secrets: SecretStore) -> Any:
    if isinstance(value, str):
        return secrets.substitute(value)
    if isinstance(value, dict):
        return {key: _filled(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [_filled(item, secrets) for item in value]
    return value


def with_secrets(channel: ChannelConfig, secrets: SecretStore) -> ChannelConfig:
    """The channel's settings with every {{secret:NAME}} filled in: for the send alone."""
    return _CHANNEL.validate_python(_filled(channel.model_dump(mode="json", by_alias=True), secrets))


class Notifier:
    def __init__(
        self,
        fleet: FleetView,
        db: Database,
        events: EventBus,
        *,
        clock: Callable[[], datetime] = utcnow,
        backoff: Callable[[int], float] = backoff_s,
        send: Callable[[ChannelConfig, Notification], Awaitable[None]] | None = None,
    ) -> None:
        """`send`: what delivers one notification (default: the sender of the channel's type)."""
        self._fleet = fleet
        self._events = events
        self._store = NotificationStore(db)
        self._runs = RunStore(db)
        self._clock = clock
        self._backoff = backoff
        self._senders = ChannelSenders()
        self._send = send or self._senders
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._pruned_at: datetime | None = None

    @property
    def store(self) -> NotificationStore:
        return self._store

    def allowed(self, agent: str) -> list[str]:
        config = self._fleet.current().config
        return list(config.agents[agent].channels) if agent in config.agents else []

    def check(self, agent: str, channel: str, text: str) -> NotifyChannel:
        """The channel, if the agent may send this text there now; NotificationRefused otherwise."""
        config = self._fleet.current().config
        allowed = self.allowed(agent)
        if channel not in allowed or channel not in config.channels:
            granted = ", ".join(allowed) or "none"
            raise NotificationRefused(
                f"channel {channel!r} is not listed for agent {agent} in fleet.yaml "
                f"(agents.{agent}.channels: {granted})"
            )
        if not text.strip():
            raise NotificationRefused("the notification's text is empty")
        limit = config.limits.bytes_of("message")
        if len(text.encode()) > limit:
            raise NotificationRefused(
                f"the text is {len(text.encode())} bytes, over limits.message ({limit} bytes)"
            )
        settings = config.channels[channel]
        if isinstance(settings, ChatChannelBase):
            raise NotificationRefused(f"channel {channel!r} is a chat channel, not a notification channel")
        since = self._clock() - RATE_WINDOW
        if self._store.sent_since(agent, channel, since) >= settings.max_per_hour:
            oldest = self._store.oldest_since(agent, channel, since) or self._clock()
            wait = max(1, int((oldest + RATE_WINDOW - self._clock()).total_seconds()))
            raise NotificationRefused(
                f"channel {channel} takes at most {settings.max_per_hour} notifications an hour from "
                f"agent {agent} (channels.{channel}.max_per_hour); the next one in {wait}s"
            )
        return settings

    async def notify(
        self, agent: str, channel: str, text: str, origin: Origin = "tool", item_id: str | None = None
    ) -> NotificationRecord:
        """Record the notification and make its first attempt now; a failure is retried later."""
        self.check(agent, channel, text)
        record = self._store.add(agent, channel, origin, text, item_id, self._clock())
        await self._attempt(record)
        final = self._store.get(record.id)
        assert final is not None
        return final

    def queue(self, agent: str, channel: str, text: str, origin: Origin = "rule") -> NotificationRecord:
        """Record a notification for `run` to send (from a thread that is not the event loop)."""
        self.check(agent, channel, text)
        record = self._store.add(agent, channel, origin, text, None, self._clock())
        if self._wake is not None:
            call_in_loop(self._loop, self._wake.set)
        return record

    def queue_rule(self, agent: str, channel: str, text: str) -> str | None:
        """A heartbeat rule's notification, queued; why it is refused, or None (the scheduler's
        RuleNotifier)."""
        try:
            self.queue(agent, channel, text, "rule")
        except NotificationRefused as refused:
            return str(refused)
        return None

    async def run(self, poll_s: float = POLL_S) -> None:
        """Send what is due (queued and retried notifications), until cancelled."""
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        try:
            while True:
                await self.step()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=poll_s)
                self._wake.clear()
        finally:
            await self._senders.aclose()

    async def step(self) -> None:
        now = self._clock()
        if self._pruned_at is None or now - self._pruned_at >= PRUNE_EVERY:
            self._pruned_at = now
            await asyncio.to_thread(self._store.prune, now - RETENTION)
        for record in await asyncio.to_thread(self._store.due, now):
            await self._attempt(record)

    async def _attempt(self, record: NotificationRecord) -> None:
        config = self._fleet.current().config
        found = config.channels.get(record.channel)
        settings = None if isinstance(found, ChatChannelBase) else found
        lease = timedelta(seconds=(settings.timeout_s if settings else 10.0) + 30.0)
        if not self._store.take(record.id, self._clock(), lease):
            return
        started = self._clock()
        if settings is None:
            self._finish_failed(record, "the channel is no longer in fleet.yaml", started, retry=False)
            return
        secrets = self._fleet.secrets()
        message = Notification(
            fleet=config.fleet,
            agent=record.agent,
            channel=record.channel,
            text=record.text,
            at=record.created_at,
        )
        try:
            await self._send(with_secrets(settings, secrets), message)
        except (SendFailed, SecretError, ValidationError) as failed:
            reason = secrets.redact(_reason(failed))
            retry = record.attempts + 1 < settings.attempts
            self._finish_failed(record, reason, started, retry=retry)
            return
        self._store.mark_sent(record.id, self._clock())
        self._events.publish(
            SENT_EVENT,
            agent=record.agent,
            channel=record.channel,
            notification_id=record.id,
            origin=record.origin,
            attempts=record.attempts + 1,
        )
        self._record_run(record, "sent", f"sent to {record.channel}", started)

    def _finish_failed(
        self, record: NotificationRecord, reason: str, started: datetime, *, retry: bool
    ) -> None:
        attempts = record.attempts + 1
        now = self._clock()
        retry_at = now + timedelta(seconds=self._backoff(attempts)) if retry else None
        self._store.mark_failed(record.id, reason, retry_at, now)
        common = {
            "channel": record.channel,
            "notification_id": record.id,
            "attempts": attempts,
            "error": reason,
        }
        log.warning(
            "notification %s to %s failed (attempt %d): %s", record.id, record.channel, attempts, reason
        )
        if retry_at is not None:
            self._events.publish(RETRYING_EVENT, agent=record.agent, retry_at=retry_at.isoformat(), **common)
            return
        self._events.publish(FAILED_EVENT, agent=record.agent, origin=record.origin, **common)
        self._record_run(record, "failed", f"{record.channel}: {reason}", started)

    def _record_run(self, record: NotificationRecord, outcome: str, detail: str, started: datetime) -> None:
        self._runs.add_notification(
            run_id=uuid.uuid4().hex,
            agent=record.agent,
            trigger=record.origin,
            outcome=outcome,
            detail=detail,
            started_at=started,
            finished_at=self._clock(),
            item_id=record.item_id,
        )


def _reason(failed: Exception) -> str:
    if isinstance(failed, ValidationError):
        return "the channel's settings are invalid once its secrets are filled in"
    return str(failed)

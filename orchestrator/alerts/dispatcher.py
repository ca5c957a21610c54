"""Reads new events, records the alerts they raise, and delivers them with retries.

The position in the event log is stored, so an orchestrator restart neither repeats old
alerts nor misses events published while it was down. Delivery is at-least-once: an alert
whose POST was cut by a crash is sent again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from agent_runtime import backoff_delay, nominal_delay
from agent_runtime.protocol import utcnow
from orchestrator.alerts.delivery import DeliveryFailed, WebhookSender, payload_for
from orchestrator.alerts.rules import AlertEvaluator, Firing
from orchestrator.alerts.store import AlertRecord, AlertStore
from orchestrator.config.alerts import AlertsConfig
from orchestrator.config.units import parse_duration
from orchestrator.events import EventBus

log = logging.getLogger(__name__)

POLL_S = 1.0
EVENT_BATCH = 500
MAX_BACKOFF_S = 300.0


def backoff_s(attempts: int) -> float:
    """After the n-th failed attempt at most 2, 4, 8... seconds (capped at five minutes); the
    delay itself is jittered below that bound."""
    return nominal_delay(attempts + 1, 1.0, MAX_BACKOFF_S)


class AlertDispatcher:
    def __init__(
        self,
        config: Callable[[], AlertsConfig],
        fleet: str,
        events: EventBus,
        store: AlertStore,
        checking_in: Callable[[str], bool],
        sender: WebhookSender | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._current_config = config
        self._config = config()
        self._fleet = fleet
        self._events = events
        self._store = store
        self._checking_in = checking_in
        self._sender = sender or WebhookSender()
        self._clock = clock
        self._evaluator = AlertEvaluator(self._config)
        self._repeat_after = timedelta(seconds=parse_duration(self._config.repeat_after))

    def _follow_config(self) -> None:
        """`flotilla apply` may change the rules; counts in progress restart with the new ones."""
        config = self._current_config()
        if config != self._config:
            self._config = config
            self._evaluator = AlertEvaluator(config)
            self._repeat_after = timedelta(seconds=parse_duration(config.repeat_after))

    def start_position(self) -> None:
        """A first start alerts on what happens from now on, not on the history."""
        if self._store.cursor() is None:
            latest = self._events.recent(limit=1)
            self._store.advance(latest[-1].seq if latest else 0)

    def step(self) -> None:
        """One pass: new events, timed conditions, then deliveries that are due."""
        self._follow_config()
        cursor = self._store.cursor() or 0
        events = self._events.recent(limit=EVENT_BATCH, after=cursor)
        for event in events:
            for firing in self._evaluator.on_event(event):
                self._record(firing)
        if events:
            self._store.advance(events[-1].seq)
        for firing in self._evaluator.on_tick(self._clock(), self._checking_in):
            self._record(firing)
        for alert in self._store.due(self._clock()):
            self._deliver(alert)

    def _record(self, firing: Firing) -> None:
        rule = self._config.rules[firing.rule_index]
        for name in rule.to or list(self._config.webhooks):
            webhook = self._config.webhooks[name]
            queued = self._store.record(
                key=firing.key,
                webhook=name,
                title=firing.title,
                agent=firing.agent,
                summary=firing.summary,
                payload=payload_for(webhook, self._fleet, firing),
                now=self._clock(),
                repeat_after=self._repeat_after,
            )
            if queued:
                log.info("alert %s for %s -> %s: %s", firing.title, firing.agent, name, firing.summary)

    def _deliver(self, alert: AlertRecord) -> None:
        webhook = self._config.webhooks.get(alert.webhook)
        if webhook is None:
            self._store.mark_attempt_failed(
                alert.id, f"webhook {alert.webhook} is no longer configured", None
            )
            return
        try:
            self._sender.send(webhook, alert.payload)
        except DeliveryFailed as exc:
            attempts = alert.attempts + 1
            retry_at = None
            if attempts < self._config.max_attempts:
                retry_at = self._clock() + timedelta(seconds=backoff_delay(attempts + 1, 1.0, MAX_BACKOFF_S))
            log.warning("alert %d to %s failed (attempt %d): %s", alert.id, alert.webhook, attempts, exc)
            self._store.mark_attempt_failed(alert.id, str(exc), retry_at)
            return
        self._store.mark_sent(alert.id, self._clock())

    async def run(self, poll_s: float = POLL_S) -> None:
        await asyncio.to_thread(self.start_position)
        try:
            while True:
                await asyncio.to_thread(self.step)
                await asyncio.sleep(poll_s)
        finally:
            self._sender.close()

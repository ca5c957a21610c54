"""Rates and quotas on what an agent sends: events, tells and asks (fleet.yaml `limits.rates`).

What a tell or an ask costs, and whom:
- the sender's own rate (`tells` or `asks`), whatever becomes of the message: a refused message
  is logged too, so it is paid for like a delivered one;
- when the sender may talk to the recipient, the pair's rates (`pair` in messages, `pair_bytes`
  in bytes of text or input) and the recipient's `intake`, the share of its inbox (and so of its
  model budget, which pays for the work on each item) that all peers together may claim;
- and the sender may have at most `pending` unfinished items in one recipient's inbox.

A message an ACL refuses never touches the recipient's intake, so an agent cannot spend the
budget of one it may not talk to. Over any of them the sender gets a `RateLimited` (429 with
Retry-After), and nothing is charged. The first refusal of a limit opens an episode and
publishes one `limit.exceeded` event; later refusals only count. The episode ends once a whole
period of the rate has passed without a refusal, so a sustained flood is one episode however
often the refilled bucket lets a request through. Buckets live in memory: a restart gives every
agent a full burst again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, NoReturn

from pydantic import BaseModel

from agent_runtime.protocol import utcnow
from orchestrator.config.fair_share import RatesConfig
from orchestrator.errors import RateLimited
from orchestrator.events import EventBus, EventType
from orchestrator.fair_share.buckets import Bucket

MessageKind = Literal["tell", "ask"]
# The pending quota is not a rate: the sender may retry once its recipient has worked a while.
PENDING_RETRY_S = 10.0


class LimitState(BaseModel):
    """One limit of one agent as the operator sees it."""

    agent: str
    limit: str
    subject: str
    rate: str
    refused: int
    """Refusals since the orchestrator started."""
    limited_since: datetime | None = None
    """When the current episode began; None while the agent is within the limit."""
    episode_refused: int = 0


@dataclass
class _Episode:
    started: datetime
    last: float
    """When the latest refusal came (the limiter's clock)."""
    quiet_s: float
    """A refusal after this much quiet opens a new episode."""
    refused: int = 0

    def over(self, now: float) -> bool:
        return now - self.last > self.quiet_s


@dataclass(frozen=True)
class _Charge:
    limit: str
    subject: str
    bucket: Bucket
    cost: float


class FairShare:
    """The buckets of every agent, and the episodes of refusal the operator is told about."""

    def __init__(
        self,
        rates: Callable[[], RatesConfig],
        events: EventBus,
        pending: Callable[[str, str], int],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rates = rates
        self._events = events
        self._pending = pending
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, str], Bucket] = {}
        self._episodes: dict[tuple[str, str, str], _Episode] = {}
        self._refused: dict[tuple[str, str, str], int] = {}

    # --- admitting ----------------------------------------------------------------------------

    def admit_event(self, agent: str) -> None:
        """Charge one event to the agent, or raise RateLimited."""
        self._admit(agent, [("events", agent, 1.0)])

    def admit_run(self, agent: str) -> None:
        """Charge one run record to the agent, or raise RateLimited."""
        self._admit(agent, [("runs", agent, 1.0)])

    def admit_message(self, sender: str, kind: MessageKind, recipient: str | None, size: int) -> None:
        """Charge a tell or an ask; `recipient` is None when the sender may not talk to it."""
        charges: list[tuple[str, str, float]] = [(f"{kind}s", sender, 1.0)]
        if recipient is not None:
            pair = f"{sender}->{recipient}"
            charges += [("pair", pair, 1.0), ("pair_bytes", pair, float(size)), ("intake", recipient, 1.0)]
            quota = self._rates().pending
            if self._pending(recipient, sender) >= quota:
                self._refuse(
                    sender,
                    "pending",
                    pair,
                    PENDING_RETRY_S,
                    PENDING_RETRY_S,
                    f"{sender} already has {quota} unfinished items in {recipient}'s inbox"
                    f" (limits.rates.pending = {quota})",
                )
        self._admit(sender, charges)

    def _admit(self, agent: str, wanted: list[tuple[str, str, float]]) -> None:
        rates = self._rates()
        now = self._clock()
        with self._lock:
            charges = [
                _Charge(limit, subject, self._bucket(rates, limit, subject, now), cost)
                for limit, subject, cost in wanted
            ]
            waits = [(charge.bucket.wait_for(charge.cost, now), charge) for charge in charges]
            wait, worst = max(waits, key=lambda pair: pair[0])
            if wait <= 0:
                for charge in charges:
                    charge.bucket.take(charge.cost)
                return
        unit = " bytes" if worst.limit == "pair_bytes" else ""
        self._refuse(
            agent,
            worst.limit,
            worst.subject,
            wait,
            worst.bucket.rate.period_s,
            f"{_what(worst.limit, worst.subject)} is over limits.rates.{worst.limit}"
            f" ({worst.bucket.rate.describe(unit)}); try again in {wait:.1f}s",
        )

    def _bucket(self, rates: RatesConfig, limit: str, subject: str, now: float) -> Bucket:
        rate = rates.rate(limit)
        bucket = self._buckets.get((limit, subject))
        if bucket is None or bucket.rate != rate:
            # A new rate (an apply changed it) starts full, like a restart.
            bucket = self._buckets[(limit, subject)] = Bucket.full(rate, now)
        return bucket

    def _refuse(
        self, agent: str, limit: str, subject: str, wait: float, quiet_s: float, message: str
    ) -> NoReturn:
        key = (agent, limit, subject)
        now = self._clock()
        with self._lock:
            self._refused[key] = self._refused.get(key, 0) + 1
            episode = self._episodes.get(key)
            opened = episode is None or episode.over(now)
            if episode is None or opened:
                episode = self._episodes[key] = _Episode(utcnow(), now, quiet_s)
            episode.last = now
            episode.refused += 1
        if opened:
            self._events.publish_data(
                EventType.LIMIT_EXCEEDED,
                agent,
                {"limit": limit, "subject": subject, "retry_after_s": round(wait, 3), "message": message},
            )
        raise RateLimited(
            "rate_limited",
            message,
            wait,
            [f"limit: limits.rates.{limit}", f"subject: {subject}", f"retry_after_s: {wait:.3f}"],
        )

    # --- the operator's view ------------------------------------------------------------------

    def states(self) -> list[LimitState]:
        rates = self._rates()
        now = self._clock()
        with self._lock:
            keys = sorted(set(self._refused) | set(self._episodes))
            found = []
            for agent, limit, subject in keys:
                episode = self._episodes.get((agent, limit, subject))
                if episode is not None and episode.over(now):
                    episode = None
                found.append(
                    LimitState(
                        agent=agent,
                        limit=limit,
                        subject=subject,
                        rate=_rate_text(rates, limit),
                        refused=self._refused.get((agent, limit, subject), 0),
                        limited_since=episode.started if episode else None,
                        episode_refused=episode.refused if episode else 0,
                    )
                )
        return found


def _rate_text(rates: RatesConfig, limit: str) -> str:
    if limit == "pending":
        return f"{rates.pending} unfinished"
    return str(getattr(rates, limit))


def _what(limit: str, subject: str) -> str:
    if limit == "events":
        return f"{subject}'s event reports"
    if limit == "runs":
        return f"{subject}'s run records"
    if limit in ("tells", "asks"):
        return f"{subject}'s {limit}"
    if limit == "intake":
        return f"what peers send to {subject}"
    return f"what {subject.replace('->', ' sends to ')}"

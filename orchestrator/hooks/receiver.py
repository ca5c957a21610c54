"""One hook request, from its bytes to an inbox item: rate limit, size cap, signature, freshness,
replay, then the item for the hook's agent. Every outcome is counted; a run of bad signatures is
one event (an episode), not one per request."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from pydantic import BaseModel

from agent_runtime.protocol import ItemKind, utcnow
from orchestrator.broker import Inbox, new_item_id
from orchestrator.config.hooks import HookConfig
from orchestrator.events import EventBus
from orchestrator.fair_share.windows import SlidingWindows
from orchestrator.fleet.view import FleetView
from orchestrator.hooks.render import render
from orchestrator.hooks.signatures import SignatureRefused, StaleRequest, Verified, verify
from orchestrator.hooks.store import HookStore
from orchestrator.secrets import SecretUnavailable

RATE_WINDOW_S = 60.0
# Bad signatures closer together than this belong to one episode: one event for all of them.
EPISODE_QUIET_S = 600.0
# GitHub does not sign a time: its deliveries and bodies are remembered at least this long.
GITHUB_MEMORY = timedelta(days=1)
RECEIVED_EVENT = "hook.received"
BAD_SIGNATURE_EVENT = "hook.signature_refused"


@dataclass(frozen=True)
class HookRequest:
    hook: str
    headers: Mapping[str, str]
    """Lowercase header names."""
    body: bytes
    remote: str = ""


class HookAccepted(BaseModel):
    """The answer to a verified request: the item it became and the agent that will see it."""

    item_id: str
    agent: str


@dataclass
class HookRefused(Exception):
    status: int
    code: str
    message: str
    retry_after_s: int | None = None
    details: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return self.message


class HookReceiver:
    def __init__(
        self,
        fleet: FleetView,
        inbox: Inbox,
        events: EventBus,
        store: HookStore,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._fleet = fleet
        self._inbox = inbox
        self._events = events
        self._store = store
        self._clock = clock
        self._windows = SlidingWindows(RATE_WINDOW_S)
        self._lock = threading.Lock()
        self._last_bad: dict[str, float] = {}

    def receive(self, request: HookRequest) -> HookAccepted:
        """The item a verified request became; HookRefused with the status to answer otherwise."""
        config = self._fleet.current().config
        hook = config.hooks.get(request.hook)
        if hook is None:
            raise HookRefused(404, "not_found", f"no hook {request.hook!r} in this fleet")
        name = request.hook
        if hook.agent not in config.agents:
            raise HookRefused(503, "unavailable", f"hook {name}'s agent {hook.agent!r} is not in the fleet")
        self._admit(name, hook)
        if len(request.body) > hook.max_payload_bytes:
            self._store.count(name, "too_large")
            raise HookRefused(
                413,
                "too_large",
                f"the payload is {len(request.body)} bytes, over hooks.{name}.max_payload "
                f"({hook.max_payload_bytes} bytes)",
            )
        verified = self._verified(name, hook, request)
        text = render(name, verified, request.body, request.headers.get("content-type", ""))
        limit = config.limits.bytes_of("message")
        if len(text.encode()) > limit:
            self._store.count(name, "too_large")
            raise HookRefused(
                413, "too_large", f"the rendered payload is over limits.message ({limit} bytes)"
            )
        return self._queue(name, hook, verified, text, len(request.body))

    def _admit(self, name: str, hook: HookConfig) -> None:
        """At most `max_per_minute` requests (signed or not) in any minute."""
        wait_s = self._windows.admit(name, hook.max_per_minute, self._clock())
        if wait_s is not None:
            wait = int(wait_s)
            self._store.count(name, "rate_limited")
            raise HookRefused(
                429,
                "rate_limited",
                f"hook {name} takes at most {hook.max_per_minute} requests a minute; retry in {wait}s",
                retry_after_s=wait,
            )

    def _verified(self, name: str, hook: HookConfig, request: HookRequest) -> Verified:
        try:
            secret = self._fleet.secrets().value(hook.secret)
        except SecretUnavailable as unavailable:
            self._store.count(name, "unavailable")
            raise HookRefused(
                503, "unavailable", f"hook {name} cannot verify requests: {unavailable}"
            ) from None
        try:
            verified = verify(hook, secret, request.headers, request.body, self._clock())
        except SignatureRefused as bad:
            self._bad_signature(name, str(bad), request.remote)
            raise HookRefused(401, "bad_signature", f"signature refused: {bad}") from None
        except StaleRequest as stale:
            self._store.count(name, "stale")
            raise HookRefused(401, "stale", str(stale)) from None
        self._last_bad.pop(name, None)
        return verified

    def _bad_signature(self, name: str, reason: str, remote: str) -> None:
        self._store.count(name, "bad_signature")
        now = self._clock()
        with self._lock:
            previous = self._last_bad.get(name)
            self._last_bad[name] = now
        if previous is None or now - previous > EPISODE_QUIET_S:
            self._events.publish(BAD_SIGNATURE_EVENT, hook=name, reason=reason, remote=remote)

    def _queue(self, name: str, hook: HookConfig, verified: Verified, text: str, size: int) -> HookAccepted:
        keep = timedelta(seconds=hook.window_s)
        if hook.signature == "github":
            keep = max(keep, GITHUB_MEMORY)
        principal = f"hook:{name}"
        item_id = new_item_id()
        earlier = self._store.claim(name, verified.replay_keys, item_id, utcnow(), keep)
        if earlier is not None:
            self._store.count(name, "replayed")
            raise HookRefused(409, "replayed", f"this request was accepted before, as item {earlier}")
        item = self._inbox.submit(
            hook.agent, ItemKind.HOOK, principal, text, principal=principal, item_id=item_id
        )
        self._store.count(name, "accepted")
        self._events.publish(
            RECEIVED_EVENT,
            agent=hook.agent,
            hook=name,
            item_id=item.id,
            event=verified.event,
            delivery=verified.delivery,
            bytes=size,
        )
        return HookAccepted(item_id=item.id, agent=hook.agent)

"""Slack: the Events API posts each message to the orchestrator (POST /channels/slack/NAME/events),
signed with the app's signing secret (checked with slack_sdk's `SignatureVerifier`); the reply
goes out with slack_sdk's `WebClient` (in a worker thread: it blocks) in the thread of the message
it answers.

Slack writes `&`, `<` and `>` in a message's text as `&amp;`, `&lt;` and `&gt;`, and reads them so
in what an app sends: `<!channel>` in an answer would notify a whole channel, `<https://...|here>`
would hide a link's address. Texts are unescaped on the way in and escaped on the way out, so an
agent's answer is shown as written and never notifies or links by markup.

Slack cuts a message's `text` past 40,000 characters; replies are sent in pieces of at most
39,000, cut at line breaks where possible. Slack retries an event it did not see answered within
three seconds, so the request is answered at once and the conversation goes on in a task; the
event ids of the last hour, and the messages they carried (an app subscribed to both `message`
and `app_mention` gets two events for one message), are remembered so that each message is
answered once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from orchestrator.config.channels import SlackChatChannel
from orchestrator.conversations.router import ChatMessage, log_failure
from orchestrator.conversations.text import chunks
from orchestrator.fleet.view import FleetView
from orchestrator.secrets import SecretError

log = logging.getLogger(__name__)

MESSAGE_LIMIT = 39_000
DEFAULT_API_BASE = "https://slack.com/api/"
SEND_TIMEOUT_S = 30
SEEN_EVENTS = 10_000
SEEN_FOR_S = 3600.0
# A mention of the bot at the start of a message (`<@U0123>`) is how the app was addressed.
LEADING_MENTION = re.compile(r"^\s*<@[A-Z0-9]+>\s*")
Handle = Callable[[ChatMessage], Coroutine[Any, Any, None]]


@dataclass
class SlackRefused(Exception):
    status: int
    code: str
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass
class SlackAnswer:
    """What to answer Slack: the challenge of a url_verification, or an empty 200."""

    body: dict[str, Any] = field(default_factory=dict)


class SlackEvents:
    def __init__(self, fleet: FleetView, handle: Handle, clock: Callable[[], float] = time.time) -> None:
        self._fleet = fleet
        self._handle = handle
        self._clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()

    def receive(self, name: str, headers: Mapping[str, str], body: bytes) -> SlackAnswer:
        """Check the request's signature, then answer it; a message starts a conversation task."""
        settings = self._fleet.current().config.channels.get(name)
        if not isinstance(settings, SlackChatChannel):
            raise SlackRefused(404, "not_found", f"no slack_chat channel {name!r} in this fleet")
        secrets = self._fleet.secrets()
        try:
            signing_secret = secrets.substitute(settings.signing_secret)
            token = secrets.substitute(settings.token)
        except SecretError as missing:
            raise SlackRefused(
                503, "unavailable", f"channel {name} cannot verify requests: {missing}"
            ) from None
        if not _signed(
            signing_secret,
            self._clock,
            body,
            headers.get("x-slack-request-timestamp", ""),
            headers.get("x-slack-signature", ""),
        ):
            raise SlackRefused(401, "bad_signature", "missing, wrong or stale Slack signature")
        try:
            payload = json.loads(body)
        except json.JSONDecodeError:
            raise SlackRefused(400, "bad_request", "the body is not JSON") from None
        if not isinstance(payload, dict):
            raise SlackRefused(400, "bad_request", "the body is not a JSON object")
        if payload.get("type") == "url_verification":
            return SlackAnswer({"challenge": str(payload.get("challenge", ""))})
        event = payload.get("event")
        if payload.get("type") == "event_callback" and self._first_time(_event_keys(payload, event)):
            self._start(name, settings, token, event)
        return SlackAnswer()

    def _first_time(self, keys: list[str]) -> bool:
        now = self._clock()
        while self._seen and (
            len(self._seen) > SEEN_EVENTS or next(iter(self._seen.values())) < now - SEEN_FOR_S
        ):
            self._seen.popitem(last=False)
        if any(key in self._seen for key in keys):
            return False
        for key in keys:
            self._seen[key] = now
        return True

    def _start(self, name: str, settings: SlackChatChannel, token: str, event: object) -> None:
        if not isinstance(event, dict) or event.get("type") not in ("message", "app_mention"):
            return
        # Edits, joins and the bot's own messages carry a subtype or a bot id: not a person's words.
        if event.get("subtype") or event.get("bot_id") or not event.get("user") or not event.get("text"):
            return
        from slack_sdk.errors import SlackApiError, SlackClientError
        from slack_sdk.web import WebClient

        client = WebClient(
            token=token, base_url=settings.api_base or DEFAULT_API_BASE, timeout=SEND_TIMEOUT_S
        )
        where, thread = str(event.get("channel", "")), str(event.get("thread_ts") or event.get("ts") or "")
        redact = self._fleet.secrets().redact

        async def reply(text: str) -> None:
            try:
                for piece in chunks(text, MESSAGE_LIMIT, lambda part: len(escape(part))):
                    await asyncio.to_thread(
                        client.chat_postMessage,
                        channel=where,
                        text=escape(piece),
                        thread_ts=thread or None,
                        mrkdwn=False,
                    )
            except (SlackApiError, SlackClientError, OSError) as failed:
                log.warning("channel %s: a reply was not sent: %s", name, redact(str(failed)))

        message = ChatMessage(
            channel=name,
            user_id=str(event["user"]),
            name=str(event.get("user", "")),
            text=unescape(LEADING_MENTION.sub("", str(event["text"]))),
            reply=reply,
        )
        task = asyncio.get_running_loop().create_task(self._handle(message), name=f"slack-{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(log_failure)


def escape(text: str) -> str:
    """Text as Slack shows it literally: no mention, link or channel notification by markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _event_keys(payload: dict[str, Any], event: object) -> list[str]:
    """What identifies an event: its id, and the message it carries (channel and time stamp)."""
    keys = [f"event:{payload['event_id']}"] if payload.get("event_id") else []
    if isinstance(event, dict) and event.get("channel") and event.get("ts"):
        keys.append(f"message:{event['channel']}:{event['ts']}")
    return keys


def _signed(secret: str, now: Callable[[], float], body: bytes, timestamp: str, signature: str) -> bool:
    """slack_sdk's check of a request's signature and age, against the orchestrator's clock.
    slack_sdk is loaded with the first Slack request, not with every orchestrator's start."""
    from slack_sdk.signature import Clock, SignatureVerifier

    class _Clock(Clock):
        def now(self) -> float:
            return now()

    return SignatureVerifier(secret, clock=_Clock()).is_valid(body, timestamp, signature)

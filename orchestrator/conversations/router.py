"""One message from a person in a chat tool, from its arrival to the agent's reply: pairing,
the allow-list, commands (`/agent`), routing (`@agent` or the person's current agent), the cap
and cleaning of the text, then the item for the agent and its answer sent back."""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

from agent_runtime.protocol import ItemKind, utcnow
from orchestrator.broker import Inbox
from orchestrator.config.channels import ChatChannel, ChatChannelBase
from orchestrator.conversations.people import PairingCode, PeopleStore, Person, person_principal
from orchestrator.conversations.text import clean
from orchestrator.events import EventBus
from orchestrator.fair_share.windows import SlidingWindows
from orchestrator.fleet.view import FleetView

log = logging.getLogger(__name__)

RATE_WINDOW_S = 60.0
# After `reply_timeout_s` the person is told the agent is late; its answer is still sent when it
# comes within this many seconds more (the wait does not survive a restart of the orchestrator).
LATE_REPLY_S = 3600.0
# Messages a sender who is not paired may send in a minute (pairing attempts included); past it
# they are dropped without an answer, so guessing codes is slow and a flood costs no replies.
UNPAIRED_PER_MINUTE = 5
# Priority of a person's message: as an operator's, ahead of heartbeats and peers.
PRIORITY = 10
RECEIVED_EVENT = "chat.received"
REFUSED_EVENT = "chat.refused"
PAIRED_EVENT = "chat.paired"
NOT_PAIRED = (
    "You are not paired with this fleet. Ask its operator for a pairing code "
    "(flotilla channels pair) and send it here."
)
PAIR_COMMAND = re.compile(r"^/(?:pair|start)(?:@\w+)?\s+(\S+)\s*$", re.IGNORECASE)
BARE_CODE = re.compile(r"^[A-Za-z0-9]{8}$")
AGENT_COMMAND = re.compile(r"^/agent(?:@\w+)?(?:\s+(\S+))?\s*$", re.IGNORECASE)
MENTION = re.compile(r"^@([a-z][a-z0-9_-]*)\b[:,]?\s*(.*)$", re.DOTALL)


class PairingRefused(Exception):
    """The channel cannot pair anyone (unknown, not a chat channel, or the agent not on it)."""


@dataclass(frozen=True)
class ChatMessage:
    """A text a person sent, and how to answer in the same chat or thread."""

    channel: str
    user_id: str
    name: str
    text: str
    reply: Callable[[str], Awaitable[None]]


def log_failure(task: asyncio.Task[None]) -> None:
    """A conversation's task ended by an error: logged, since nobody awaits it."""
    if not task.cancelled() and (failed := task.exception()) is not None:
        log.error("%s failed", task.get_name(), exc_info=failed)


class Conversations:
    def __init__(
        self,
        fleet: FleetView,
        inbox: Inbox,
        events: EventBus,
        people: PeopleStore,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fleet = fleet
        self._inbox = inbox
        self._events = events
        self.people = people
        self._clock = clock
        self._windows = SlidingWindows(RATE_WINDOW_S)

    def channel(self, name: str) -> ChatChannel | None:
        found = self._fleet.current().config.channels.get(name)
        return found if isinstance(found, ChatChannelBase) else None

    def pair_code(self, channel: str, agent: str | None = None) -> PairingCode:
        """A one-time code for one person to pair with `channel` (their first agent: `agent`)."""
        settings = self.channel(channel)
        if settings is None:
            chats = [
                n for n, c in self._fleet.current().config.channels.items() if isinstance(c, ChatChannelBase)
            ]
            raise PairingRefused(
                f"no chat channel {channel!r} in fleet.yaml (chat channels: {', '.join(chats) or 'none'})"
            )
        if agent is not None and agent not in settings.agents:
            raise PairingRefused(
                f"agent {agent!r} is not on channel {channel} (channels.{channel}.agents: "
                f"{', '.join(settings.agents)})"
            )
        return self.people.issue(channel, agent, timedelta(seconds=settings.pairing_ttl_s), utcnow())

    async def handle(self, message: ChatMessage) -> None:
        """Answer one message: a refusal, a command's answer, or the agent's reply."""
        settings = self.channel(message.channel)
        if settings is None:
            return
        text = clean(message.text)
        person = self.people.get(message.channel, message.user_id)
        if person is None:
            if self._admit(message.channel, message.user_id, UNPAIRED_PER_MINUTE):
                await self._unpaired(message, text)
            return
        if not self._admit(person.channel, person.user_id, settings.max_per_minute):
            await message.reply(
                f"Too many messages: at most {settings.max_per_minute} a minute. Try again shortly."
            )
            return
        command = AGENT_COMMAND.match(text)
        if command:
            await message.reply(self._switch(person, settings, command.group(1)))
            return
        agent, text = self._route(person, settings, text)
        if agent not in settings.agents:
            await message.reply(
                f"No agent {agent!r} here. Agents on this channel: {', '.join(settings.agents)}."
            )
            return
        problem = self._too_large(text)
        if problem or not text:
            await message.reply(problem or "The message is empty.")
            return
        await self._converse(message, person, settings, agent, text)

    async def _unpaired(self, message: ChatMessage, text: str) -> None:
        """A pairing code pairs the sender; anything else is refused and reaches no agent."""
        command = PAIR_COMMAND.match(text)
        code = command.group(1) if command else text if BARE_CODE.match(text) else None
        person = (
            self.people.redeem(message.channel, code, message.user_id, message.name[:200], utcnow())
            if code
            else None
        )
        if person is None:
            self._events.publish(
                REFUSED_EVENT, channel=message.channel, user=message.user_id, reason="not paired"
            )
            await message.reply(
                NOT_PAIRED if code is None else "That pairing code is not valid (or expired)."
            )
            return
        self._events.publish(PAIRED_EVENT, channel=message.channel, principal=person.principal)
        settings = self.channel(message.channel)
        current = self._current(person, settings) if settings else ""
        await message.reply(f"Paired. You are talking to {current}; switch with /agent NAME or write @NAME.")

    def _admit(self, channel: str, user_id: str, per_minute: int) -> bool:
        return self._windows.admit((channel, user_id), per_minute, self._clock()) is None

    @staticmethod
    def _current(person: Person, settings: ChatChannelBase) -> str:
        return person.agent if person.agent in settings.agents else settings.agents[0]

    def _switch(self, person: Person, settings: ChatChannelBase, agent: str | None) -> str:
        if agent is None:
            return f"You are talking to {self._current(person, settings)}. Agents here: {', '.join(settings.agents)}."
        if agent not in settings.agents:
            return f"No agent {agent!r} here. Agents on this channel: {', '.join(settings.agents)}."
        self.people.switch(person.channel, person.user_id, agent)
        return f"You are now talking to {agent}."

    def _route(self, person: Person, settings: ChatChannelBase, text: str) -> tuple[str, str]:
        mention = MENTION.match(text)
        if mention:
            return mention.group(1), mention.group(2).strip()
        return self._current(person, settings), text

    def _too_large(self, text: str) -> str | None:
        limit = self._fleet.current().config.limits.bytes_of("message")
        size = len(text.encode())
        if size > limit:
            return f"The message is {size} bytes, over this fleet's limit of {limit} bytes."
        return None

    async def _converse(
        self, message: ChatMessage, person: Person, settings: ChatChannelBase, agent: str, text: str
    ) -> None:
        principal = person_principal(message.channel, message.user_id)
        item = self._inbox.submit(
            agent, ItemKind.OPERATOR_MESSAGE, principal, text, principal=principal, priority=PRIORITY
        )
        self._events.publish(
            RECEIVED_EVENT, agent=agent, channel=message.channel, principal=principal, item_id=item.id
        )
        named = f"{agent}: " if len(settings.agents) > 1 else ""
        result = await self._inbox.wait_result(item.id, settings.reply_timeout_s)
        if result is None:
            await message.reply(
                f"{named}{agent} has not answered within {math.ceil(settings.reply_timeout_s)}s; "
                "its answer will follow here."
            )
            result = await self._inbox.wait_result(item.id, max(LATE_REPLY_S, settings.reply_timeout_s))
        if result is None:
            answer = f"{agent} has still not answered; no answer will be sent here (item {item.id})."
        elif not result.ok:
            answer = f"{agent} could not answer: {result.error or 'no reason given'}"
        else:
            answer = result.text or "(no text in the answer)"
        await message.reply(named + answer)

"""Telegram: a bot's messages read by long polling (getUpdates, python-telegram-bot's `Bot`),
each answered in the chat it came from, as a reply to it and in its forum topic if any.

Telegram caps a message at 4096 characters, counted in UTF-16 code units: longer replies go out
as several messages.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

from telegram import Bot, Message, ReplyParameters
from telegram.error import TelegramError

from orchestrator.config.channels import TelegramChatChannel
from orchestrator.conversations.router import ChatMessage, log_failure
from orchestrator.conversations.text import chunks, utf16_units

log = logging.getLogger(__name__)

MESSAGE_LIMIT = 4096
DEFAULT_API_BASE = "https://api.telegram.org/bot"
RETRY_S = 5.0
Handle = Callable[[ChatMessage], Coroutine[Any, Any, None]]


def bot_for(settings: TelegramChatChannel, token: str) -> Bot:
    return Bot(token, base_url=settings.api_base or DEFAULT_API_BASE)


async def send_reply(bot: Bot, message: Message, text: str) -> None:
    """The text in the message's chat, in as many messages as the limit asks."""
    for piece in chunks(text, MESSAGE_LIMIT, utf16_units):
        await bot.send_message(
            message.chat.id,
            piece,
            message_thread_id=message.message_thread_id if message.is_topic_message else None,
            reply_parameters=ReplyParameters(message.message_id, allow_sending_without_reply=True),
        )


def _without_mention(text: str, username: str) -> str:
    """The text without a leading @mention of the bot itself (how a group addresses it)."""
    mention = f"@{username}"
    if username and text[: len(mention)].lower() == mention.lower():
        return text[len(mention) :].lstrip(" :,")
    return text


class ReplyOrder:
    """Replies to one chat leave in the order its messages came: each message is handled in a
    task of its own, and two immediate answers (a refusal, a command's) would otherwise race
    to the Bot API. Only the sending is ordered; waiting for an agent's answer holds nothing."""

    def __init__(self) -> None:
        self._turns: dict[int, tuple[asyncio.Lock, int]] = {}

    def __len__(self) -> int:
        """Chats with a reply being sent or waiting to be."""
        return len(self._turns)

    @asynccontextmanager
    async def turn(self, chat_id: int) -> AsyncIterator[None]:
        lock, users = self._turns.get(chat_id, (asyncio.Lock(), 0))
        self._turns[chat_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._turns[chat_id]
            if users == 1:
                del self._turns[chat_id]  # no one else waits: a chat costs nothing between replies
            else:
                self._turns[chat_id] = (lock, users - 1)


class TelegramPoller:
    """Reads one bot's updates until cancelled; each text message goes to `handle` in a task of
    its own, so a slow agent never holds up the others."""

    def __init__(
        self,
        name: str,
        settings: TelegramChatChannel,
        token: str,
        handle: Handle,
        redact: Callable[[str], str] = str,
    ) -> None:
        """`redact`: what an error becomes before it is logged (the fleet's secrets replaced by
        their handles: the token is part of every Bot API URL)."""
        self._name = name
        self._redact = redact
        self._settings = settings
        self._bot = bot_for(settings, token)
        self._handle = handle
        self._tasks: set[asyncio.Task[None]] = set()
        self._order = ReplyOrder()

    async def run(self) -> None:
        offset: int | None = None
        ready = False
        try:
            while True:
                try:
                    if not ready:
                        await self._bot.initialize()
                        ready = True
                    updates = await self._bot.get_updates(
                        offset=offset,
                        timeout=self._settings.poll_timeout_s,
                        allowed_updates=["message"],
                        read_timeout=self._settings.poll_timeout_s + 10,
                    )
                except TelegramError as failed:
                    log.warning("channel %s: getUpdates failed: %s", self._name, self._redact(str(failed)))
                    await asyncio.sleep(RETRY_S)
                    continue
                for update in updates:
                    offset = update.update_id + 1
                    if update.message is not None:
                        self._dispatch(update.message)
        finally:
            for task in list(self._tasks):
                task.cancel()
            await self._bot.shutdown()

    def _dispatch(self, message: Message) -> None:
        if message.text is None or message.from_user is None or message.from_user.is_bot:
            return
        user = message.from_user
        bot, redact, order = self._bot, self._redact, self._order

        async def reply(text: str) -> None:
            try:
                async with order.turn(message.chat_id):
                    await send_reply(bot, message, text)
            except TelegramError as failed:
                log.warning("channel %s: a reply was not sent: %s", self._name, redact(str(failed)))

        chat = ChatMessage(
            channel=self._name,
            user_id=str(user.id),
            name=user.full_name,
            text=_without_mention(message.text, bot.username),
            reply=reply,
        )
        task = asyncio.create_task(self._handle(chat), name=f"chat-{self._name}-{message.message_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(log_failure)

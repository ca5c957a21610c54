"""The chat channels at work while the orchestrator runs: one long-polling reader per Telegram
channel of the fleet in force, started, replaced and stopped as fleet.yaml changes. (Slack
comes in by HTTP: `orchestrator.conversations.slack`.)"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from orchestrator.config.channels import TelegramChatChannel
from orchestrator.conversations.router import Conversations
from orchestrator.fleet.view import FleetView
from orchestrator.secrets import SecretError

log = logging.getLogger(__name__)

RECONCILE_S = 2.0


class ChatService:
    def __init__(self, fleet: FleetView, conversations: Conversations) -> None:
        self._fleet = fleet
        self._conversations = conversations
        self._pollers: dict[str, tuple[TelegramChatChannel, asyncio.Task[None]]] = {}

    async def run(self, every_s: float = RECONCILE_S) -> None:
        try:
            while True:
                self._reconcile()
                await asyncio.sleep(every_s)
        finally:
            for _settings, task in self._pollers.values():
                task.cancel()
            for _settings, task in self._pollers.values():
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _reconcile(self) -> None:
        wanted = {
            name: settings
            for name, settings in self._fleet.current().config.channels.items()
            if isinstance(settings, TelegramChatChannel)
        }
        for name, (settings, task) in list(self._pollers.items()):
            if wanted.get(name) != settings or task.done():
                task.cancel()
                del self._pollers[name]
        for name, settings in wanted.items():
            if name in self._pollers:
                continue
            try:
                token = self._fleet.secrets().substitute(settings.token)
            except SecretError as missing:
                log.warning("channel %s is not read: %s", name, missing)
                continue
            # Loaded with the first Telegram channel: python-telegram-bot costs a fleet without one
            # about 60 ms of every start.
            from orchestrator.conversations.telegram import TelegramPoller

            poller = TelegramPoller(
                name, settings, token, self._conversations.handle, self._fleet.secrets().redact
            )
            self._pollers[name] = (settings, asyncio.create_task(poller.run(), name=f"telegram-{name}"))

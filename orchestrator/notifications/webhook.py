"""The `webhook` channel: one POST of JSON per notification, with plain httpx."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from orchestrator.config.channels import WebhookChannel
from orchestrator.notifications.message import Notification, SendFailed


def webhook_body(channel: WebhookChannel, message: Notification) -> dict[str, Any]:
    if channel.format == "slack":
        return {"text": f"[{message.fleet}] {message.agent}: {message.text}"}
    return {
        "fleet": message.fleet,
        "agent": message.agent,
        "channel": message.channel,
        "text": message.text,
        "at": message.at.isoformat(),
    }


class WebhookSender:
    """One client per event loop, made with the first webhook notification: making one loads the
    system's trust store (tens of milliseconds of CPU), which each POST would pay otherwise."""

    def __init__(self) -> None:
        self._clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        for other in [known for known in self._clients if known.is_closed()]:
            del self._clients[other]
        if loop not in self._clients:
            self._clients[loop] = httpx.AsyncClient(follow_redirects=False)
        return self._clients[loop]

    async def send(self, channel: WebhookChannel, message: Notification) -> None:
        headers = {"content-type": "application/json", "user-agent": "flotilla-notify", **channel.headers}
        try:
            response = await self._client().post(
                channel.url, json=webhook_body(channel, message), headers=headers, timeout=channel.timeout_s
            )
        except httpx.HTTPError as failed:
            raise SendFailed(f"{type(failed).__name__}: {failed}") from None
        if response.status_code >= 300:
            raise SendFailed(f"HTTP {response.status_code}: {response.text[:200]}")

    async def aclose(self) -> None:
        """Close the client of the running loop (the others' loops are gone with their sockets)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

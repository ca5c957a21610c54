"""The `webhook` channel: one POST of JSON per notification, with plain httpx."""

from __future__ import annotations

from typing import Any

import httpx

from orchestrator.channels.message import Notification, SendFailed
from orchestrator.config.channels import WebhookChannel


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


async def send_webhook(channel: WebhookChannel, message: Notification) -> None:
    headers = {"content-type": "application/json", "user-agent": "flotilla-notify", **channel.headers}
    try:
        async with httpx.AsyncClient(follow_redirects=False, timeout=channel.timeout_s) as client:
            response = await client.post(channel.url, json=webhook_body(channel, message), headers=headers)
    except httpx.HTTPError as failed:
        raise SendFailed(f"{type(failed).__name__}: {failed}") from None
    if response.status_code >= 300:
        raise SendFailed(f"HTTP {response.status_code}: {response.text[:200]}")

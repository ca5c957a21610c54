"""The `slack`, `telegram` and `apprise` channels, sent through the apprise library.

Apprise's plugins are synchronous (requests): each send runs on a worker thread. The library is
imported by the first send. Apprise reports
a failure as `False` and logs the reason; the log lines of the attempt are kept as its reason.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING
from urllib.parse import quote

from orchestrator.config.channels import AppriseChannel, SlackChannel, TelegramChannel
from orchestrator.notifications.message import Notification, SendFailed

if TYPE_CHECKING:
    import apprise

AppriseKind = SlackChannel | TelegramChannel | AppriseChannel
# apprise logs through one logger: one send at a time keeps each attempt's reasons its own.
_SENDING = threading.Lock()


def apprise_url(channel: AppriseKind) -> str:
    if isinstance(channel, SlackChannel):
        if channel.webhook is not None:
            return channel.webhook
        return f"slack://{channel.token}/?to={quote(channel.channel or '', safe='')}"
    if isinstance(channel, TelegramChannel):
        return f"tgram://{channel.token}/{quote(channel.chat_id, safe='')}"
    return channel.url


def _plugin(channel: AppriseKind) -> apprise.NotifyBase:
    import apprise  # about 0.1 s of imports, paid by the first notification, not by start-up

    plugin = apprise.Apprise.instantiate(apprise_url(channel))
    if plugin is None:
        raise SendFailed(f"apprise does not understand the {channel.type} channel's URL")
    base = getattr(channel, "api_base", None)
    if base:
        # Instance attributes shadow the plugin's class-level endpoints.
        root = base.rstrip("/")
        if isinstance(channel, SlackChannel):
            plugin.webhook_url = f"{root}/services"  # type: ignore[attr-defined]
            plugin.api_url = root + "/api/{}"  # type: ignore[attr-defined]
        else:
            plugin.notify_url = f"{root}/bot"  # type: ignore[attr-defined]
    plugin.socket_connect_timeout = channel.timeout_s
    plugin.socket_read_timeout = channel.timeout_s
    return plugin


def _send_blocking(channel: AppriseKind, message: Notification) -> None:
    import apprise

    plugin = _plugin(channel)
    capture = apprise.LogCapture(level=logging.WARNING)  # type: ignore[no-untyped-call]
    with _SENDING, capture as captured:
        sent = plugin.notify(body=message.text, title="")
        reasons = captured.getvalue()
    if not sent:
        lines = [line.split(" - ", 2)[-1] for line in reasons.strip().splitlines()]
        raise SendFailed(
            "; ".join(lines)[-500:] or f"apprise could not deliver to the {channel.type} channel"
        )


async def send_with_apprise(channel: AppriseKind, message: Notification) -> None:
    await asyncio.to_thread(_send_blocking, channel, message)

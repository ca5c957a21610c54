"""Each channel type against a local stand-in of its service (127.0.0.1, ephemeral ports): the
webhook POST, the mail over SMTP, and Slack and Telegram through apprise with their API's base URL
pointed at a local fake. Nothing here reaches a real service."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from pydantic import TypeAdapter

from orchestrator.config.channels import (
    AppriseChannel,
    ChannelConfig,
    EmailChannel,
    SlackChannel,
    TelegramChannel,
    WebhookChannel,
)
from orchestrator.notifications.apprise_send import send_with_apprise
from orchestrator.notifications.message import Notification, SendFailed
from orchestrator.notifications.smtp import send_email
from orchestrator.notifications.webhook import WebhookSender
from tests.orchestrator.notifications.servers import HttpReceiver, SmtpSink


async def send_webhook(channel: WebhookChannel, message: Notification) -> None:
    sender = WebhookSender()
    try:
        await sender.send(channel, message)
    finally:
        await sender.aclose()


CHANNEL = TypeAdapter[ChannelConfig](ChannelConfig)
MESSAGE = Notification(
    fleet="harbour",
    agent="reviewer",
    channel="ops",
    text="PR 12 needs a review\nby Friday",
    at=datetime.now(UTC),
)


@pytest.fixture
def receiver() -> Iterator[HttpReceiver]:
    running = HttpReceiver(statuses={"/down": 503}).start()
    try:
        yield running
    finally:
        running.stop()


def test_a_webhook_gets_the_notification_as_json(receiver: HttpReceiver) -> None:
    channel = CHANNEL.validate_python(
        {"type": "webhook", "url": f"{receiver.url}/in", "headers": {"X-Key": "k1"}}
    )
    assert isinstance(channel, WebhookChannel)
    asyncio.run(send_webhook(channel, MESSAGE))
    (got,) = receiver.on("/in")
    assert got.json()["text"] == MESSAGE.text and got.json()["agent"] == "reviewer"
    assert got.headers["x-key"] == "k1"


def test_one_webhook_sender_serves_one_loop_after_another(receiver: HttpReceiver) -> None:
    channel = CHANNEL.validate_python({"type": "webhook", "url": f"{receiver.url}/in"})
    assert isinstance(channel, WebhookChannel)
    sender = WebhookSender()

    async def twice() -> None:
        await sender.send(channel, MESSAGE)
        await sender.send(channel, MESSAGE)

    asyncio.run(twice())
    asyncio.run(twice())  # the first loop's client is dropped, not reused across loops
    asyncio.run(sender.aclose())
    assert len(receiver.on("/in")) == 4


def test_a_webhook_that_refuses_is_a_failed_attempt(receiver: HttpReceiver) -> None:
    channel = CHANNEL.validate_python({"type": "webhook", "url": f"{receiver.url}/down"})
    assert isinstance(channel, WebhookChannel)
    with pytest.raises(SendFailed, match="HTTP 503"):
        asyncio.run(send_webhook(channel, MESSAGE))


def test_a_mail_goes_out_over_smtp() -> None:
    sink = SmtpSink().start()
    try:
        channel = CHANNEL.validate_python(
            {
                "type": "email",
                "smtp": {"host": "127.0.0.1", "port": sink.port},
                "from": "fleet@example.test",
                "to": ["ops@example.test", "lead@example.test"],
            }
        )
        assert isinstance(channel, EmailChannel)
        asyncio.run(send_email(channel, MESSAGE))
    finally:
        sink.stop()
    ((envelope, mail),) = sink.mails
    assert envelope.rcpt_tos == ["ops@example.test", "lead@example.test"]
    assert mail["Subject"] == "[harbour] reviewer: PR 12 needs a review"
    assert "by Friday" in mail.get_payload()


def test_an_unreachable_smtp_server_is_a_failed_attempt() -> None:
    from orchestrator.testing.cli import free_port

    channel = CHANNEL.validate_python(
        {
            "type": "email",
            "smtp": {"host": "127.0.0.1", "port": free_port()},
            "from": "a@b.test",
            "to": ["c@d.test"],
            "timeout_s": 5,
        }
    )
    assert isinstance(channel, EmailChannel)
    with pytest.raises(SendFailed):
        asyncio.run(send_email(channel, MESSAGE))


def test_telegram_through_apprise_reaches_the_bot_api_at_its_base_url(receiver: HttpReceiver) -> None:
    channel = CHANNEL.validate_python(
        {
            "type": "telegram",
            "token": "123456789:abcdefghij_klmnopqrst",
            "chat_id": "-1001234",
            "api_base": receiver.url,
        }
    )
    assert isinstance(channel, TelegramChannel)
    asyncio.run(send_with_apprise(channel, MESSAGE))
    (got,) = receiver.on("/bot123456789:abcdefghij_klmnopqrst/sendMessage")
    body = got.json()
    assert str(body["chat_id"]) == "-1001234" and "PR 12 needs a review" in body["text"]


def test_slack_with_a_bot_token_posts_to_chat_post_message(receiver: HttpReceiver) -> None:
    channel = CHANNEL.validate_python(
        {
            "type": "slack",
            "token": "xoxb-1234-1234-4ddbc191d40ee098cbaae6f3523ada2d",
            "channel": "#ops",
            "api_base": receiver.url,
        }
    )
    assert isinstance(channel, SlackChannel)
    asyncio.run(send_with_apprise(channel, MESSAGE))
    (got,) = receiver.on("/api/chat.postMessage")
    body = got.json()
    assert body["channel"] == "#ops" and "PR 12 needs a review" in json.dumps(body)
    assert got.headers["authorization"] == "Bearer xoxb-1234-1234-4ddbc191d40ee098cbaae6f3523ada2d"


def test_slack_refusing_is_a_failed_attempt_with_apprise_reason(receiver: HttpReceiver) -> None:
    receiver.statuses["/services/T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ"] = 500
    channel = CHANNEL.validate_python(
        {
            "type": "slack",
            "webhook": "https://hooks.slack.com/services/T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ",
            "api_base": receiver.url,
        }
    )
    assert isinstance(channel, SlackChannel)
    with pytest.raises(SendFailed) as failed:
        asyncio.run(send_with_apprise(channel, MESSAGE))
    assert str(failed.value)
    assert receiver.on("/services/T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ")


def test_any_apprise_url_works_here_its_json_service_at_a_local_receiver(receiver: HttpReceiver) -> None:
    address = receiver.url.removeprefix("http://")
    channel = CHANNEL.validate_python({"type": "apprise", "url": f"json://{address}/apprise"})
    assert isinstance(channel, AppriseChannel)
    asyncio.run(send_with_apprise(channel, MESSAGE))
    (got,) = receiver.on("/apprise")
    assert got.json()["message"] == MESSAGE.text

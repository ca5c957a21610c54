"""fleet.yaml `channels:`: where notifications go, each a named channel of one `type`, and the
chat tools people converse with the fleet through (`telegram_chat`, `slack_chat`).

The `type` field tells the kinds apart (a pydantic discriminated union): adding a kind of channel
is a model here with its own `type` literal, added to `ChannelConfig`. Any string setting may hold
`{{secret:NAME}}` handles; the orchestrator fills them in only at the moment it sends
(`orchestrator.notifications`), so records and events keep the handle.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from orchestrator.config.secrets import secret_handles

CHANNEL_NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
HTTP_URL = re.compile(r"^https?://[^/\s]+")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _http_url(value: str) -> str:
    if not HTTP_URL.match(value) and not value.lstrip().startswith("{{"):
        raise ValueError(f"invalid url {value!r}: must start with http:// or https://")
    return value


def _optional_http_url(value: str | None) -> str | None:
    return None if value is None else _http_url(value)


class ChannelBase(_Strict):
    """What every channel has: how often each agent may use it, and how hard delivery tries."""

    description: str = Field(default="", description="Shown to the agents that may use it")
    max_per_hour: int = Field(
        default=60, ge=1, le=3600, description="Notifications each agent may send here per hour"
    )
    attempts: int = Field(
        default=5, ge=1, le=20, description="Delivery attempts, with backoff, before an alert"
    )
    timeout_s: float = Field(default=10.0, gt=0, le=120, description="Seconds one attempt may take")

    def handles(self) -> list[str]:
        """The secret names the settings refer to, in order, each once."""
        found: list[str] = []
        for value in self.model_dump(mode="json").values():
            found += _handles_in(value)
        return list(dict.fromkeys(found))


def _handles_in(value: object) -> list[str]:
    if isinstance(value, str):
        return secret_handles(value)
    if isinstance(value, dict):
        return [name for item in value.values() for name in _handles_in(item)]
    if isinstance(value, list):
        return [name for item in value for name in _handles_in(item)]
    return []


class WebhookChannel(ChannelBase):
    """A POST of JSON ({fleet, agent, channel, text, at}) to an HTTP endpoint."""

    type: Literal["webhook"] = Field(description="The kind of channel")
    url: str = Field(
        description="http(s) URL; may hold secret handles", examples=["http://127.0.0.1:9000/notify"]
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Extra request headers; values may hold secret handles",
        examples=[{"Authorization": "Bearer {{secret:ops_token}}"}],
    )
    format: Literal["json", "slack"] = Field(
        default="json", description="json: Flotilla's object; slack: {'text': ...} for Slack-style webhooks"
    )

    _url = field_validator("url")(_http_url)


class SmtpServer(_Strict):
    """An SMTP server and how to log in to it."""

    host: str = Field(description="The SMTP server's host name or address")
    port: int = Field(default=587, ge=1, le=65535, description="The SMTP server's port")
    tls: bool = Field(default=False, description="TLS from the first byte (usually port 465)")
    starttls: bool = Field(default=False, description="Upgrade to TLS with STARTTLS (usually port 587)")
    username: str | None = Field(default=None, description="Login name, if the server wants one")
    password: str | None = Field(default=None, description="A secret handle, e.g. {{secret:smtp_password}}")


class EmailChannel(ChannelBase):
    """A plain-text mail sent over SMTP."""

    type: Literal["email"] = Field(description="The kind of channel")
    smtp: SmtpServer = Field(description="The SMTP server that sends the mail")
    from_: str = Field(alias="from", description="The sender's address")
    to: list[str] = Field(min_length=1, description="Recipients' addresses")
    subject: str = Field(
        default="[{fleet}] {agent}: {summary}",
        description="Subject template: {fleet}, {agent}, {channel} and {summary} (the text's first line)",
    )

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class SlackChannel(ChannelBase):
    """A Slack message, sent by apprise: with a bot token and a channel, or an incoming webhook."""

    type: Literal["slack"] = Field(description="The kind of channel")
    token: str | None = Field(default=None, description="Bot token (xoxb-...), as a secret handle")
    channel: str | None = Field(default=None, description="#channel, or a user or channel id, with `token`")
    webhook: str | None = Field(
        default=None,
        description="An incoming webhook URL (https://hooks.slack.com/services/...), as a handle",
    )
    api_base: str | None = Field(
        default=None, description="Another base URL for Slack's API (a proxy, or a local fake in tests)"
    )

    @model_validator(mode="after")
    def _one_way_in(self) -> SlackChannel:
        if (self.token is None) == (self.webhook is None):
            raise ValueError("give either token (with channel) or webhook")
        if self.token is not None and not self.channel:
            raise ValueError("a slack channel with a bot token needs `channel`")
        return self


class TelegramChannel(ChannelBase):
    """A Telegram message from a bot, sent by apprise."""

    type: Literal["telegram"] = Field(description="The kind of channel")
    token: str = Field(description="The bot's token, as a secret handle")
    chat_id: str = Field(description="The chat (user, group or channel id) that receives the messages")
    api_base: str | None = Field(
        default=None,
        description="Another base URL for the Bot API (a self-hosted one, or a local fake in tests)",
    )


class AppriseChannel(ChannelBase):
    """Any service apprise supports, by its URL (https://github.com/caronc/apprise/wiki)."""

    type: Literal["apprise"] = Field(description="The kind of channel")
    url: str = Field(
        description="An apprise URL; keep its credentials in secret handles",
        examples=["ntfys://{{secret:ntfy_topic}}", "discord://{{secret:discord_webhook}}"],
    )


class ChatChannelBase(_Strict):
    """A chat tool people converse with agents through, once paired (`flotilla channels pair`)."""

    description: str = Field(default="", description="What the channel is for")
    agents: list[str] = Field(
        min_length=1,
        description="The agents people may talk to here; the first is a new person's current agent",
    )
    pairing_ttl_s: int = Field(default=900, ge=60, le=86400, description="Seconds a pairing code stays valid")
    max_per_minute: int = Field(
        default=20, ge=1, le=600, description="Messages each person may send in any minute"
    )
    reply_timeout_s: float = Field(
        default=600.0,
        gt=0,
        le=3600,
        description="Seconds to wait for an agent's reply before telling the person it is late",
    )

    def handles(self) -> list[str]:
        """The secret names the settings refer to, in order, each once."""
        found: list[str] = []
        for value in self.model_dump(mode="json").values():
            found += _handles_in(value)
        return list(dict.fromkeys(found))


class TelegramChatChannel(ChatChannelBase):
    """Conversations with a Telegram bot, read by long polling (getUpdates)."""

    type: Literal["telegram_chat"] = Field(description="The kind of channel")
    token: str = Field(description="The bot's token, as a secret handle")
    api_base: str | None = Field(
        default=None,
        description="The Bot API's base URL up to the token, e.g. https://api.telegram.org/bot "
        "(a self-hosted Bot API, or a local fake in tests)",
    )
    poll_timeout_s: int = Field(default=30, ge=0, le=50, description="Seconds one getUpdates waits")

    _api_base = field_validator("api_base")(_optional_http_url)


class SlackChatChannel(ChatChannelBase):
    """Conversations with a Slack app: its Events API posts to the orchestrator
    (POST /channels/slack/NAME/events), replies go out with the bot token."""

    type: Literal["slack_chat"] = Field(description="The kind of channel")
    token: str = Field(description="The bot token (xoxb-...), as a secret handle")
    signing_secret: str = Field(description="The app's signing secret, as a secret handle")
    api_base: str | None = Field(
        default=None,
        description="Slack's Web API base URL, e.g. https://slack.com/api/ (a local fake in tests)",
    )

    _api_base = field_validator("api_base")(_optional_http_url)


ChannelConfig = Annotated[
    WebhookChannel
    | EmailChannel
    | SlackChannel
    | TelegramChannel
    | AppriseChannel
    | TelegramChatChannel
    | SlackChatChannel,
    Field(discriminator="type"),
]
NotifyChannel = WebhookChannel | EmailChannel | SlackChannel | TelegramChannel | AppriseChannel
ChatChannel = TelegramChatChannel | SlackChatChannel
NOTIFY_TYPES = ("webhook", "email", "slack", "telegram", "apprise")
CHAT_TYPES = ("telegram_chat", "slack_chat")


def channel_name_problem(name: str) -> str | None:
    if not CHANNEL_NAME.match(name):
        return f"invalid channel name {name!r}: lowercase letters, digits and '-', starting with a letter"
    return None

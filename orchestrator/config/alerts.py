"""fleet.yaml `alerts:`: rules on the fleet's events, delivered to webhooks."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from orchestrator.config.units import parse_duration

AlertCondition = Literal[
    "budget_warning",
    "budget_exhausted",
    "dead_letter",
    "notification_failed",
    "crash_loop",
    "unhealthy",
    "disk_full",
    "event",
]
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _duration(value: str) -> str:
    parse_duration(value)
    return value


class WebhookConfig(_Strict):
    """Where alerts go. Header values come from the host environment, never from fleet.yaml."""

    url: str = Field(description="http(s) URL that receives a POST with the alert as JSON")
    format: Literal["json", "slack"] = Field(
        default="json",
        description="json: Flotilla's alert object; slack: {'text': ...} for Slack-style hooks",
    )
    headers_env: dict[str, str] = Field(
        default_factory=dict, description="Header name -> host environment variable holding its value"
    )
    timeout_s: float = Field(default=5.0, gt=0, le=60, description="Seconds to wait for the webhook")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(f"invalid webhook url {value!r}: must start with http:// or https://")
        return value

    @field_validator("headers_env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        bad = sorted(name for name in value.values() if not ENV_NAME.match(name))
        if bad:
            raise ValueError(f"not environment variable names: {', '.join(bad)}")
        return value


class AlertRule(_Strict):
    """One condition and the webhooks it notifies."""

    when: AlertCondition = Field(
        description="budget_warning (80 %), budget_exhausted (100 %), dead_letter, notification_failed "
        "(a notification's every attempt failed), crash_loop, "
        "unhealthy (for a while), disk_full (an agent's /data is full; resolved when freed), or event (any event type, named in `event`)"
    )
    name: str | None = Field(default=None, description="Shown in the alert; defaults to `when`")
    event: str | None = Field(default=None, description="The event type, for when: event")
    agents: list[str] = Field(default_factory=list, description="Only these agents (default: all)")
    to: list[str] = Field(default_factory=list, description="Webhook names (default: all)")
    restarts: int = Field(default=3, ge=2, description="crash_loop: this many restarts...")
    within: str = Field(default="10m", description="crash_loop: ...within this long")
    for_: str = Field(default="5m", alias="for", description="unhealthy: not checking in for this long")

    _durations = field_validator("within", "for_")(_duration)

    @model_validator(mode="after")
    def _event_named(self) -> AlertRule:
        if self.when == "event" and not self.event:
            raise ValueError("a rule with when: event needs `event` (an event type such as agent.stopped)")
        if self.when != "event" and self.event:
            raise ValueError(f"`event` is only for when: event, not when: {self.when}")
        return self

    @property
    def title(self) -> str:
        return self.name or (self.event if self.when == "event" and self.event else self.when)


class AlertsConfig(_Strict):
    """Rules on the fleet's events and the webhooks they notify."""

    webhooks: dict[str, WebhookConfig] = Field(default_factory=dict, description="Webhooks by name")
    rules: list[AlertRule] = Field(default_factory=list, description="When to send an alert, and where")
    repeat_after: str = Field(
        default="1h", description="The same alert (rule, agent, webhook) is sent again only after this long"
    )
    max_attempts: int = Field(default=5, ge=1, le=20, description="Delivery attempts, with backoff")

    _repeat = field_validator("repeat_after")(_duration)

    @model_validator(mode="after")
    def _known_webhooks(self) -> AlertsConfig:
        if self.rules and not self.webhooks:
            raise ValueError("alert rules need at least one webhook under alerts.webhooks")
        for index, rule in enumerate(self.rules):
            unknown = sorted(set(rule.to) - set(self.webhooks))
            if unknown:
                raise ValueError(f"rules[{index}].to names unknown webhooks: {', '.join(unknown)}")
        return self

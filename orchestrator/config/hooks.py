"""fleet.yaml `hooks:`: signed HTTP requests from outside (a code host, a CI system) that become
inbox items for one agent. Each hook names its agent, the secret its sender signs with, and how
it signs (`github`: X-Hub-Signature-256; `hmac`: a signature header over a timestamp and the body).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.config.units import parse_duration, parse_memory

HOOK_NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
HEADER_NAME = re.compile(r"^[A-Za-z0-9-]{1,64}$")
MIN_PAYLOAD_BYTES = 1024


class HookConfig(BaseModel):
    """One inbound hook, served at POST /hooks/NAME on the orchestrator's operator address."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str = Field(description="The agent whose inbox receives the verified requests")
    secret: str = Field(description="The name of a secret under `secrets:` that the sender signs with")
    signature: Literal["github", "hmac"] = Field(
        description="github: X-Hub-Signature-256 (HMAC-SHA256 of the body), deliveries told apart by "
        "X-GitHub-Delivery; hmac: HMAC-SHA256 of 'TIMESTAMP.BODY' in `header`, the Unix time in "
        "`timestamp_header`"
    )
    header: str = Field(
        default="X-Flotilla-Signature",
        description="hmac: the header with the hex signature (sha256= optional)",
    )
    timestamp_header: str = Field(
        default="X-Flotilla-Timestamp", description="hmac: the header with the request's Unix time in seconds"
    )
    replay_window: str = Field(
        default="5m",
        description="hmac: how far a timestamp may be from now; a signature seen within it is refused. "
        "github: how long delivery ids and bodies are remembered (at least 1d is used)",
    )
    max_payload: str | int = Field(default="256k", description="Largest body accepted (413 above)")
    max_per_minute: int = Field(
        default=30, ge=1, le=6000, description="Requests accepted per minute (429 above)"
    )

    @field_validator("replay_window")
    @classmethod
    def _window(cls, value: str) -> str:
        parse_duration(value)
        return value

    @field_validator("max_payload")
    @classmethod
    def _payload(cls, value: str | int) -> str | int:
        if parse_memory(value) < MIN_PAYLOAD_BYTES:
            raise ValueError(f"max_payload {value!r} is below {MIN_PAYLOAD_BYTES} bytes")
        return value

    @field_validator("header", "timestamp_header")
    @classmethod
    def _header(cls, value: str) -> str:
        if not HEADER_NAME.match(value):
            raise ValueError(f"invalid header name {value!r}")
        return value

    @property
    def max_payload_bytes(self) -> int:
        return parse_memory(self.max_payload)

    @property
    def window_s(self) -> float:
        return parse_duration(self.replay_window)


def hook_name_problem(name: str) -> str | None:
    if not HOOK_NAME.match(name):
        return f"invalid hook name {name!r}: lowercase letters, digits and '-', starting with a letter"
    return None

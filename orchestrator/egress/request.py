"""The arguments of an `http_request` call as the model gives them, checked before anything is sent."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_URL_CHARS = 8192
MAX_HEADERS = 50
MAX_HEADER_CHARS = 8192
MAX_BODY_CHARS = 1024 * 1024
# Framing and routing headers are the orchestrator's to set: an agent's value could smuggle a
# second request or send this one elsewhere.
RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "te",
        "trailer",
        "upgrade",
        "expect",
        "proxy-authorization",
        "proxy-connection",
    }
)

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "method": {"type": "string", "description": "HTTP method, e.g. GET or POST", "default": "GET"},
        "url": {"type": "string", "description": "Full http:// or https:// URL"},
        "headers": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "Request headers; write a credential as {{secret:NAME}}",
        },
        "body": {"type": "string", "description": "Request body (text)"},
        "timeout_s": {"type": "number", "description": "Seconds to wait at most (capped by the policy)"},
        "readable": {
            "type": "boolean",
            "description": "true: an HTML page comes back as its readable text only",
            "default": False,
        },
    },
    "required": ["url"],
    "additionalProperties": False,
}


class HttpRequestArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: str = Field(default="GET", pattern=r"^[A-Za-z]{1,16}$")
    url: str = Field(min_length=1, max_length=MAX_URL_CHARS)
    headers: dict[str, str] = Field(default_factory=dict, max_length=MAX_HEADERS)
    body: str | None = Field(default=None, max_length=MAX_BODY_CHARS)
    timeout_s: float | None = Field(default=None, gt=0)
    readable: bool = False

    @field_validator("method")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not name or any(char in name for char in " \t\r\n:") or len(name) > 256:
                raise ValueError(f"invalid header name {name[:60]!r}")
            if name.lower() in RESERVED_HEADERS:
                raise ValueError(f"header {name} is set by the orchestrator, not by the request")
            if "\r" in text or "\n" in text or len(text) > MAX_HEADER_CHARS:
                raise ValueError(f"header {name}: one line of at most {MAX_HEADER_CHARS} characters")
            if not (name.isascii() and text.isascii() and text.isprintable()):
                raise ValueError(f"header {name[:60]}: printable ASCII only")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.isprintable() or " " in value:
            raise ValueError("a URL has no spaces or control characters (percent-encode them)")
        return value

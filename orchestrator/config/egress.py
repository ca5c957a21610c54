"""fleet.yaml's `tools.http` section of an agent: which HTTP requests the orchestrator makes for it.

Nothing is allowed unless declared: a request must match one `allow` pattern (scheme, host, port,
path prefix) and use one of `methods`. Addresses that are not public (loopback, private,
link-local, CGNAT, metadata) are refused after DNS resolution unless the matching pattern names
that exact host with `allow_private: true`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agent_runtime.protocol import HTTP_REQUEST
from orchestrator.config.secrets import secret_name_problem
from orchestrator.config.units import parse_memory

HTTP_TOOL = HTTP_REQUEST  # the tool name, shared with the agent
METHOD = re.compile(r"^[A-Z]{1,16}$")
DEFAULT_PORTS = {"http": 80, "https": 443}
HOST_PATTERN = re.compile(r"^(\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?$|^[0-9a-f:.]+$")
Approval = Literal["required", "none"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class UrlPattern:
    """One allowed pattern, parsed: `https://api.example.com/v1/` or `https://*.example.com/`."""

    text: str
    scheme: str
    host: str
    port: int
    path: str

    @property
    def wildcard(self) -> bool:
        return self.host.startswith("*.")

    def matches_host(self, host: str) -> bool:
        if self.wildcard:
            return host.endswith(self.host[1:]) and len(host) > len(self.host) - 1
        return host == self.host

    def matches_path(self, path: str) -> bool:
        if self.path.endswith("/"):
            return path.startswith(self.path) or path + "/" == self.path
        return path == self.path or path.startswith(self.path + "/")


def parse_pattern(text: str) -> UrlPattern:
    """The pattern, or ValueError naming what is wrong with it."""
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise ValueError(
            f"allow: {text!r}: give an http:// or https:// address such as https://api.example.com/v1/"
        )
    if "@" in parts.netloc or parts.query or parts.fragment:
        raise ValueError(f"allow: {text!r}: a pattern has no user, query or fragment")
    host = parts.hostname or ""
    if not HOST_PATTERN.match(host):
        raise ValueError(f"allow: {text!r}: the host must be a name, `*.domain` or an address")
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError:
        raise ValueError(f"allow: {text!r}: invalid port") from None
    return UrlPattern(text=text, scheme=scheme, host=host, port=port, path=parts.path or "/")


class HttpAllowRule(_Strict):
    """An allowed URL pattern with settings of its own."""

    url: str = Field(description="scheme://host[:port]/path-prefix; the host may be *.domain")
    allow_private: bool | None = Field(
        default=None,
        description="true: this exact host may resolve to a loopback, private or link-local address "
        "(unset: the policy's allow_private)",
    )

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        parse_pattern(value)
        return value


class HttpPolicy(_Strict):
    """What the agent's `http_request` tool may do; the orchestrator makes every request."""

    allow: list[str | HttpAllowRule] = Field(
        default_factory=list,
        description="Allowed URL patterns: scheme://host[:port]/path-prefix (host may be *.domain). "
        "Nothing else is requested",
    )
    methods: list[str] = Field(
        default_factory=lambda: ["GET", "HEAD"], description="Allowed HTTP methods, e.g. [GET, POST]"
    )
    allow_private: bool = Field(
        default=False,
        description="true: hosts named exactly in allow may resolve to loopback, private or link-local "
        "addresses (a local service). Wildcard patterns never may",
    )
    secrets: list[str] = Field(
        default_factory=list,
        description="Secrets (declared under secrets:) the agent may use as {{secret:NAME}} in its requests",
    )
    approval: dict[str, Approval] = Field(
        default_factory=dict,
        description="Per method (or * for any other): required makes each such request wait for an "
        "operator's approval, e.g. {'*': required, GET: none}",
    )
    requests_per_day: int = Field(
        default=500, ge=1, le=1_000_000, description="Requests the agent may make per UTC day"
    )
    max_response_bytes: str | int = Field(
        default="1MiB", description="Longest body read from a response (the rest is cut): 256KiB, 2MiB"
    )
    timeout_s: float = Field(
        default=30.0, gt=0, le=300, description="Longest a request may take, redirects included"
    )
    max_redirects: int = Field(default=5, ge=0, le=20, description="Redirects followed, each re-checked")

    @field_validator("methods")
    @classmethod
    def _methods(cls, value: list[str]) -> list[str]:
        methods = [method.upper() for method in value]
        for method in methods:
            if not METHOD.match(method):
                raise ValueError(f"methods: invalid HTTP method {method!r}")
        return list(dict.fromkeys(methods))

    @field_validator("secrets")
    @classmethod
    def _secrets(cls, value: list[str]) -> list[str]:
        for name in value:
            problem = secret_name_problem(name)
            if problem:
                raise ValueError(f"secrets: {problem}")
        return value

    @field_validator("allow")
    @classmethod
    def _allow(cls, value: list[str | HttpAllowRule]) -> list[str | HttpAllowRule]:
        for entry in value:
            if isinstance(entry, str):
                parse_pattern(entry)
        return value

    @field_validator("approval")
    @classmethod
    def _approval(cls, value: dict[str, Approval]) -> dict[str, Approval]:
        for key in value:
            if key != "*" and not METHOD.match(key.upper()):
                raise ValueError(f"approval: {key!r} is neither an HTTP method nor *")
        return {key.upper(): rule for key, rule in value.items()}

    @field_validator("max_response_bytes")
    @classmethod
    def _max_bytes(cls, value: str | int) -> str | int:
        size = parse_memory(value)
        if not 1 <= size <= 64 * 1024 * 1024:
            raise ValueError("max_response_bytes: between 1 byte and 64MiB")
        return value

    @model_validator(mode="after")
    def _private_hosts_are_exact(self) -> HttpPolicy:
        for rule in self.rules():
            if rule.pattern.wildcard and rule.allow_private:
                raise ValueError(
                    f"allow: {rule.pattern.text!r}: allow_private needs an exact host, not a wildcard"
                )
        return self

    def rules(self) -> list[AllowedUrl]:
        found = []
        for entry in self.allow:
            if isinstance(entry, str):
                found.append(AllowedUrl(parse_pattern(entry), self.allow_private))
            else:
                private = self.allow_private if entry.allow_private is None else entry.allow_private
                found.append(AllowedUrl(parse_pattern(entry.url), private))
        return found

    @property
    def response_cap(self) -> int:
        return parse_memory(self.max_response_bytes)

    def approval_of(self, method: str) -> Approval:
        return self.approval.get(method.upper(), self.approval.get("*", "none"))

    def approval_required(self) -> list[str]:
        """`http_request.METHOD` for each allowed method whose requests wait for an operator."""
        return [f"{HTTP_TOOL}.{method}" for method in self.methods if self.approval_of(method) == "required"]


@dataclass(frozen=True)
class AllowedUrl:
    pattern: UrlPattern
    allow_private: bool

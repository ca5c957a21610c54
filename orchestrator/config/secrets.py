"""fleet.yaml's `secrets:` section: values declared once, on the host, and named by handle.

A secret comes from an environment variable of the orchestrator's host or from a file outside
the parts of the fleet folder that agents' data reaches. Wherever a value would appear in
fleet.yaml or in a tool call, `{{secret:NAME}}` stands for it; the orchestrator puts the value in
at the moment it sends (`orchestrator.secrets`).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SECRET_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
SECRET_HANDLE = re.compile(r"\{\{\s*secret:([A-Za-z0-9_]*)\s*\}\}")
HOST_PATTERN = re.compile(r"^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")

SecretPlace = Literal["header", "query", "body"]
ALL_PLACES: tuple[SecretPlace, ...] = ("header", "query", "body")


class SecretSource(BaseModel):
    """Where the orchestrator reads one secret's value: give `env` or `file`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    env: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="An environment variable of the orchestrator's host, e.g. GITHUB_TOKEN",
    )
    file: str | None = Field(
        default=None,
        description="A file holding the value (one trailing newline is dropped); absolute, or relative "
        "to the fleet folder but never under its .flotilla/ state",
    )
    hosts: list[str] | None = Field(
        default=None,
        description="The hosts the value may be sent to (api.example.com, *.example.com); a request "
        "to any other host naming the secret is refused before it is sent. Without hosts the secret "
        "goes to any allowed URL (deprecated: `flotilla validate` warns, and the next release requires "
        "hosts)",
    )
    places: list[SecretPlace] | None = Field(
        default=None,
        description="Where in a request the value may be put: header, query, body (default: header "
        "when hosts are given; anywhere without hosts)",
    )

    @field_validator("hosts")
    @classmethod
    def _hosts(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("hosts: name at least one host (api.example.com or *.example.com)")
        hosts = [host.strip().lower().rstrip(".") for host in value]
        for host in hosts:
            if not HOST_PATTERN.match(host):
                raise ValueError(f"hosts: {host!r} is not a host name or a *.domain pattern")
        return hosts

    @model_validator(mode="after")
    def _one_source(self) -> SecretSource:
        if (self.env is None) == (self.file is None):
            raise ValueError("give exactly one of env (a host environment variable) or file (a path)")
        return self

    def allowed_places(self) -> tuple[SecretPlace, ...]:
        if self.places is not None:
            return tuple(self.places)
        return ("header",) if self.hosts is not None else ALL_PLACES

    def allows_host(self, host: str) -> bool:
        """Whether the value may go to `host` (always, for a secret declared without hosts)."""
        if self.hosts is None:
            return True
        host = host.lower().rstrip(".")
        return any(
            host.endswith(pattern[1:]) and len(host) > len(pattern) - 1
            if pattern.startswith("*.")
            else host == pattern
            for pattern in self.hosts
        )

    def describe(self) -> str:
        return f"environment variable {self.env}" if self.env is not None else f"file {self.file}"


def secret_name_problem(name: str) -> str | None:
    if not SECRET_NAME.match(name):
        return f"invalid secret name {name!r}: lowercase letters, digits and '_', starting with a letter"
    return None


def secret_handles(text: str) -> list[str]:
    """The secret names a text refers to as {{secret:NAME}}, in order, each once."""
    return list(dict.fromkeys(SECRET_HANDLE.findall(text)))


def handle(name: str) -> str:
    return "{{secret:" + name + "}}"

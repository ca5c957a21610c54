"""fleet.yaml's `secrets:` section: values declared once, on the host, and named by handle.

A secret comes from an environment variable of the orchestrator's host or from a file outside
the parts of the fleet folder that agents' data reaches. Wherever a value would appear in
fleet.yaml or in a tool call, `{{secret:NAME}}` stands for it; the orchestrator puts the value in
at the moment it sends (`orchestrator.secrets`).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, model_validator

SECRET_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
SECRET_HANDLE = re.compile(r"\{\{\s*secret:([A-Za-z0-9_]*)\s*\}\}")


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

    @model_validator(mode="after")
    def _one_source(self) -> SecretSource:
        if (self.env is None) == (self.file is None):
            raise ValueError("give exactly one of env (a host environment variable) or file (a path)")
        return self

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

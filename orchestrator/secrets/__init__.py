"""Secrets declared in fleet.yaml: read on the host, filled in at the moment of sending, redacted
from whatever comes back. Imports only `orchestrator.config`; every part that sends something on
an agent's or the operator's behalf (HTTP tool, channels, MCP over HTTP, hooks) uses it."""

from orchestrator.secrets.store import (
    SecretError,
    SecretNotAllowed,
    SecretStore,
    SecretUnavailable,
)

__all__ = ["SecretError", "SecretNotAllowed", "SecretStore", "SecretUnavailable"]

"""What state.db keeps of an operator's message once delivered: no declared secret's value (it
becomes its `{{secret:NAME}}` handle) and nothing credential-shaped (the agent runtime's own
redactor, which the agent applies to what it stores)."""

from __future__ import annotations

from collections.abc import Callable

from agent_runtime import redact_credentials
from orchestrator.secrets import SecretStore


def delivered_text_mask(secrets: Callable[[], SecretStore]) -> Callable[[str], str]:
    """A mask reading the secrets of the fleet in force at each use."""

    def mask(text: str) -> str:
        return redact_credentials(secrets().redact(text)).text

    return mask

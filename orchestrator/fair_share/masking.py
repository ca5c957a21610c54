"""What state.db keeps of an operator's message once delivered: no declared secret's value (it
becomes its `{{secret:NAME}}` handle) and nothing credential-shaped (the agent runtime's own
redactor, which the agent applies to what it stores)."""

from __future__ import annotations

from collections.abc import Callable

from agent_runtime import redact_credentials
from orchestrator.config.secrets import SECRET_HANDLE
from orchestrator.secrets import SecretStore


def delivered_text_mask(secrets: Callable[[], SecretStore]) -> Callable[[str], str]:
    """A mask reading the secrets of the fleet in force at each use."""

    def mask(text: str) -> str:
        return _redact_around_handles(secrets().redact(text))

    return mask


def _redact_around_handles(text: str) -> str:
    """Credential-shaped text is masked; the handles the secret store put in stay readable."""
    parts, start = [], 0
    for match in SECRET_HANDLE.finditer(text):
        parts += [redact_credentials(text[start : match.start()]).text, match.group(0)]
        start = match.end()
    parts.append(redact_credentials(text[start:]).text)
    return "".join(parts)

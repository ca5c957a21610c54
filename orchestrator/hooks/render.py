"""A verified hook request as the text of an inbox item: a summary line for people and models,
then the payload itself (JSON re-indented, or the text as sent)."""

from __future__ import annotations

import json
import re
from typing import Any

from orchestrator.hooks.signatures import Verified

# C0 controls other than tab and line breaks, and DEL: they have no place in a prompt.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_FIELD_CHARS = 120


def _field(payload: dict[str, Any], *path: str) -> str | None:
    value: Any = payload
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return clean(str(value))[:_FIELD_CHARS] if isinstance(value, str | int) and value != "" else None


def clean(text: str) -> str:
    return _CONTROL.sub("", text)


def _summary(hook: str, verified: Verified, payload: Any) -> str:
    head = f"Hook {hook}"
    if verified.event:
        head += f": GitHub event {clean(verified.event)}"
    if verified.delivery:
        head += f" (delivery {clean(verified.delivery)})"
    if not isinstance(payload, dict):
        return head
    facts = [
        f"{label}: {value}"
        for label, value in (
            ("action", _field(payload, "action")),
            ("repository", _field(payload, "repository", "full_name")),
            ("sender", _field(payload, "sender", "login")),
            ("ref", _field(payload, "ref")),
        )
        if value
    ]
    return head + ("\n" + " · ".join(facts) if facts else "")


def render(hook: str, verified: Verified, body: bytes, content_type: str) -> str:
    """The item's text. The payload comes from outside the fleet; the agent is told so."""
    text = body.decode("utf-8", errors="replace")
    payload: Any = None
    if "json" in content_type or text.lstrip().startswith(("{", "[")):
        try:
            payload = json.loads(text)
        except ValueError:
            payload = None
    lines = [_summary(hook, verified, payload)]
    if payload is not None:
        lines += [
            "Payload (JSON, as the sender wrote it):",
            json.dumps(payload, ensure_ascii=False, indent=1),
        ]
    elif text:
        lines += ["Payload (text, as the sender wrote it):", clean(text)]
    return clean("\n".join(lines))

"""Context windows of well-known models, in tokens. fleet.yaml overrides any of them."""

from __future__ import annotations

DEFAULT_WINDOW = 8192

KNOWN_WINDOWS: dict[str, int] = {
    "test": 16384,
    "gpt-4o": 128000,
    "gpt-4o-mini": 128000,
    "gpt-4.1": 1047576,
    "gpt-4.1-mini": 1047576,
    "o3-mini": 200000,
    "claude-3-5-sonnet": 200000,
    "claude-sonnet-4": 200000,
    "llama3": 8192,
    "llama3.1": 131072,
    "qwen2.5": 32768,
    "mistral": 32768,
}


def window_for(model: str) -> int:
    """The window of 'provider:model' or 'model', matching the longest known prefix of the name."""
    name = model.split(":", 1)[1] if ":" in model else model
    name = name.rsplit("/", 1)[-1]
    best = ""
    for known in KNOWN_WINDOWS:
        if name.startswith(known) and len(known) > len(best):
            best = known
    return KNOWN_WINDOWS[best] if best else DEFAULT_WINDOW

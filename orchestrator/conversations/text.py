"""Text to and from chat tools: what a person sends is cleaned before an agent sees it; what an
agent answers is cut into messages each platform accepts.

Cleaning drops control characters (but newlines and tabs) and the invisible bidirectional
overrides that make a text read differently from what it says, then normalises to NFC. The
size cap (fleet.yaml `limits.message`) is the one an operator's message meets.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

# Unicode's explicit bidirectional embeddings, overrides and isolates.
BIDI_CONTROLS = frozenset(chr(code) for code in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)])
KEPT_CONTROLS = frozenset("\n\t")


def clean(text: str) -> str:
    """The text without control characters and bidi overrides, in NFC, trimmed."""
    kept = (
        char
        for char in text.replace("\r\n", "\n")
        if char in KEPT_CONTROLS or (unicodedata.category(char) != "Cc" and char not in BIDI_CONTROLS)
    )
    return unicodedata.normalize("NFC", "".join(kept)).strip()


def utf16_units(text: str) -> int:
    """How Telegram counts a message's length."""
    return len(text.encode("utf-16-le")) // 2


def chunks(text: str, limit: int, measure: Callable[[str], int] = len) -> list[str]:
    """The text in pieces of at most `limit` units (characters, or what `measure` counts), cut at
    the last line break, else the last space, that keeps a piece within the limit."""
    size = measure
    pieces: list[str] = []
    rest = text
    while size(rest) > limit:
        cut = _longest_prefix(rest, limit, size)
        for separator in ("\n", " "):
            at = rest.rfind(separator, 0, cut)
            if at > cut // 2:
                cut = at + 1
                break
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip("\n")
    if rest.strip() or not pieces:
        pieces.append(rest)
    return [piece for piece in pieces if piece] or [""]


def _longest_prefix(text: str, limit: int, size: Callable[[str], int]) -> int:
    """The number of characters of `text` whose size is within `limit` (at least one)."""
    low, high = 1, min(len(text), limit)
    while low < high:
        middle = (low + high + 1) // 2
        if size(text[:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    return low

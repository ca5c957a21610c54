"""The one redaction of secret values: every text the orchestrator lets out toward an agent, a
record or a log passes through `Redaction.redact` (whole text) or `Redaction.cut` (text that is
then shortened), so that no value, no common encoding of one and no piece of one left at a cut
reaches it.

A value is looked for as it is and in the encodings a server that echoes it would use: base64
(standard and URL-safe, at each of the three byte alignments a value can have inside a longer
encoded text), percent-encoding and hex. Where a text is cut, a piece of a value (or of one of
its encodings) of at least `MIN_PIECE` characters left at the cut's edge is replaced too.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, quote_plus

# Shorter values are not looked for: they would mask ordinary text ("1", "ok").
MIN_VALUE_CHARS = 4
# The shortest piece of a value at a cut that is replaced (three characters tell too little).
MIN_PIECE = 4


def _base64_forms(raw: bytes) -> list[str]:
    """The characters of `raw`'s base64 that do not depend on its neighbours, at each alignment."""
    forms = []
    for shift in range(3):
        padded = b"\0" * shift + raw
        start = -(-8 * shift // 6)  # the first character made of value bits only
        end = 8 * len(padded) // 6  # the last character made of value bits only
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            forms.append(encode(padded).decode()[start:end])
    return forms


def encoded_forms(value: str) -> list[str]:
    """`value` and its common encodings, longest first, each once."""
    raw = value.encode()
    hexed = binascii.hexlify(raw).decode()
    forms = [value, quote(value, safe=""), quote_plus(value, safe=""), hexed, hexed.upper()]
    forms += _base64_forms(raw)
    kept = {form for form in forms if len(form) >= MIN_VALUE_CHARS}
    return sorted(kept, key=lambda form: (-len(form), form))


@dataclass(frozen=True)
class _Secret:
    handle: str
    forms: tuple[str, ...]


class Redaction:
    """The values to take out of text, each with the handle that stands for it."""

    def __init__(self, values: Iterable[tuple[str, str]]) -> None:
        """`values`: (handle, value) pairs; values shorter than MIN_VALUE_CHARS are not looked for."""
        secrets = [
            _Secret(handle, tuple(encoded_forms(value)))
            for handle, value in values
            if len(value) >= MIN_VALUE_CHARS
        ]
        pairs = [(form, secret.handle) for secret in secrets for form in secret.forms]
        # Longest first, so that a value containing another is replaced whole.
        self._forms = sorted(pairs, key=lambda pair: -len(pair[0]))
        self.longest = max((len(form.encode()) for form, _ in self._forms), default=0)
        """The longest form in bytes: how far past a cut a reader must look to see a value whole."""

    def redact(self, text: str) -> str:
        """`text` with every value, in any of its forms, replaced by its handle."""
        for form, handle in self._forms:
            if form in text:
                text = text.replace(form, handle)
        return text

    def redact_data(self, data: Any) -> Any:
        """`data` (JSON-like: dicts, lists, strings) with every string redacted."""
        if isinstance(data, str):
            return self.redact(data)
        if isinstance(data, dict):
            return {key: self.redact_data(value) for key, value in data.items()}
        if isinstance(data, list | tuple):
            return [self.redact_data(value) for value in data]
        return data

    def cut(self, text: str, limit: int, *, cut_before: bool = False, cut_after: bool = False) -> str:
        """The first `limit` characters of `text`, redacted before the cut; a piece of a value
        left at the cut's edge is replaced too. `cut_before` / `cut_after`: the text already
        starts / ends at a cut someone else made (its edge may hold part of a value)."""
        shown = self.redact(text)
        if len(shown) > limit:
            shown, cut_after = shown[:limit], True
        if cut_after:
            shown = self._piece_at_end(shown)
        if cut_before:
            shown = self._piece_at_start(shown)
        return shown

    def _piece_at_end(self, text: str) -> str:
        for form, handle in self._forms:
            tail = text[-(len(form) - 1) :]
            # Only where the form's first characters occur can a piece of it begin.
            start = tail.find(form[:MIN_PIECE])
            while start != -1:
                if form.startswith(tail[start:]):
                    return text[: len(text) - len(tail) + start] + handle
                start = tail.find(form[:MIN_PIECE], start + 1)
        return text

    def _piece_at_start(self, text: str) -> str:
        for form, handle in self._forms:
            head = text[: len(form) - 1]
            # Only where the form's last characters occur can a piece of it end.
            end = head.rfind(form[-MIN_PIECE:])
            while end != -1:
                size = end + MIN_PIECE
                if form.endswith(head[:size]):
                    return handle + text[size:]
                end = head.rfind(form[-MIN_PIECE:], 0, end + MIN_PIECE - 1)
        return text


NO_REDACTION = Redaction(())

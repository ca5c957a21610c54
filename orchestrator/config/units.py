"""Parsing of the human units used in fleet.yaml: durations and memory sizes.

Kept rather than pydantic's types: `ByteSize` reads "128m" and "1g" as decimal megabytes and
gigabytes (128,000,000 bytes) and refuses Kubernetes' "128Mi", where Docker, Compose and
Kubernetes users mean 2**20 and 2**30; pydantic's durations are ISO 8601 ("PT15M") or seconds,
not the "15m" that cron-minded users write.
"""

from __future__ import annotations

import re

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")
_DURATION_FACTORS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]i?b?|b)?\s*$", re.IGNORECASE)
_MEMORY_FACTORS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_duration(text: str) -> float:
    """'15m' -> 900.0 seconds. Raises ValueError with the accepted forms."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"invalid duration {text!r}: use a number and a unit, e.g. 30s, 15m, 2h, 1d")
    seconds = float(match.group(1)) * _DURATION_FACTORS[match.group(2)]
    if seconds <= 0:
        raise ValueError(f"invalid duration {text!r}: must be greater than zero")
    return seconds


def parse_memory(text: str | int) -> int:
    """'128m' / '128Mi' / '1g' / 134217728 -> bytes. Raises ValueError."""
    if isinstance(text, int):
        return text
    match = _MEMORY.match(text)
    if not match:
        raise ValueError(f"invalid memory size {text!r}: use e.g. 64m, 128Mi, 1g")
    unit = (match.group(2) or "").lower()[:1]
    return int(float(match.group(1)) * _MEMORY_FACTORS[unit])


def format_bytes(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"

"""Five-field cron expressions, checked field by field so a problem names the field that has it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from croniter import croniter


@dataclass(frozen=True)
class CronField:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    """Names accepted for the values low, low+1, ... (jan.., sun..)."""


FIELDS = (
    CronField("minute", 0, 59),
    CronField("hour", 0, 23),
    CronField("day of month", 1, 31),
    CronField(
        "month", 1, 12, ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
    ),
    CronField("day of week", 0, 7, ("sun", "mon", "tue", "wed", "thu", "fri", "sat")),
)
FIELD_NAMES = " ".join(f.name.replace(" ", "-") for f in FIELDS)
_PART = re.compile(r"^(?P<range>\*|[^/-]+(?:-[^/-]+)?)(?:/(?P<step>[^/]+))?$")


def _value(text: str, field: CronField) -> int:
    word = text.lower()
    if word in field.names:
        return field.low + field.names.index(word)
    if not word.isdigit():
        raise ValueError(f"{field.name} {text!r} is not a number")
    number = int(word)
    if not field.low <= number <= field.high:
        raise ValueError(f"{field.name} {number} is out of range {field.low}-{field.high}")
    return number


def _check_part(part: str, field: CronField) -> None:
    match = _PART.match(part)
    if not match:
        raise ValueError(f"{field.name} {part!r} is not a value, a range a-b, '*' or a step '/n'")
    step = match["step"]
    if step is not None and (not step.isdigit() or int(step) == 0):
        raise ValueError(f"{field.name} step {step!r} must be a whole number above 0")
    if match["range"] == "*":
        return
    first, _, last = match["range"].partition("-")
    low = _value(first, field)
    if last and _value(last, field) < low:
        raise ValueError(f"{field.name} range {match['range']!r} runs backwards")


def cron_problem(expr: str) -> str | None:
    """What is wrong with a five-field cron expression, naming the field; None when it is valid."""
    fields = expr.split()
    if len(fields) != len(FIELDS):
        return f"invalid cron expression {expr!r}: expected 5 fields ({FIELD_NAMES}), got {len(fields)}"
    for text, field in zip(fields, FIELDS, strict=True):
        for part in text.split(","):
            try:
                _check_part(part, field)
            except ValueError as bad:
                return f"invalid cron expression {expr!r}: {bad}"
    if not croniter.is_valid(expr):
        return f"invalid cron expression {expr!r}: e.g. '0 9 * * 1-5' is 09:00 on weekdays"
    return None

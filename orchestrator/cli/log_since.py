"""`logs --since`: keep an agent's log lines from a moment on, read from the stamp each line starts
with (the agent's logging writes `YYYY-MM-DD HH:MM:SS,mmm` in the unit's clock). A line without a
stamp (a traceback's continuation) goes with the stamped line before it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta

import click

from orchestrator.config.units import parse_duration

_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})")


def since_moment(text: str, now: datetime) -> datetime:
    """`10m`, `2h`, `1d` before `now`, or a moment written `2026-12-03 09:30` / `2026-12-03T09:30:00`."""
    try:
        return now - timedelta(seconds=parse_duration(text))
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text).replace(tzinfo=None)
    except ValueError:
        raise click.BadParameter(
            f"{text!r}: give a duration (30s, 10m, 2h, 1d) or a moment (2026-12-03 09:30)",
            param_hint="--since",
        ) from None


def lines_since(lines: Iterable[str], moment: datetime) -> Iterator[str]:
    keep = False
    for line in lines:
        stamp = _STAMP.match(line)
        if stamp is not None:
            keep = datetime.fromisoformat(stamp.group(1)) >= moment
        if keep:
            yield line

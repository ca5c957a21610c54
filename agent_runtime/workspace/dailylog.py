"""Daily logs: `workspace/memory/YYYY-MM-DD.md`, one line per finished item (credentials redacted)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from agent_runtime.safety.redaction import redact

MAX_OUTCOME_CHARS = 160


def append_daily(workspace_root: Path, trigger: str, outcome: str, at: datetime | None = None) -> Path:
    when = at or datetime.now(UTC)
    folder = workspace_root / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{when:%Y-%m-%d}.md"
    summary = " ".join(redact(outcome).text.split())
    if len(summary) > MAX_OUTCOME_CHARS:
        summary = summary[: MAX_OUTCOME_CHARS - 1] + "…"
    header = f"# {when:%Y-%m-%d}\n\n" if not path.exists() else ""
    line = f"{header}- {when:%H:%M:%S} · {trigger} · {summary}\n".encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    return path

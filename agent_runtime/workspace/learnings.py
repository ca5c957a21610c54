"""What the agent learned the hard way: tool failures and corrections it received.

`learnings/errors.md` gets one line per distinct failure (tool, argument digest, error), with
the last time and a repeat count; `learnings/corrections.md` one line per distinct correction,
recorded by the model through the `record_correction` tool. Both are deduplicated, capped
(oldest entries go first) and injected into every prompt in a form without times or counts,
so a repeat does not change the prompt.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_runtime.workspace.versioned import KIB, atomic_write_bytes

ERRORS_CAP = 4 * KIB
CORRECTIONS_CAP = 4 * KIB
MAX_ENTRY_CHARS = 300
ERRORS_HEADER = "# Tool errors\n\n"
CORRECTIONS_HEADER = "# Corrections\n\n"
SEP = " · "

_ERROR_LINE = re.compile(
    r"^- (?P<at>\S+) · `(?P<tool>[^`]+)` · args (?P<digest>[0-9a-f]+)"
    r" · seen (?P<n>\d+) times · (?P<error>.*)$"
)
_CORRECTION_LINE = re.compile(r"^- (?P<at>\S+) · (?P<text>.*)$")


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_ENTRY_CHARS else flat[: MAX_ENTRY_CHARS - 1] + "…"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def argument_digest(arguments: Any) -> str:
    canonical = (
        arguments if isinstance(arguments, str) else json.dumps(arguments, sort_keys=True, default=str)
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:8]


@dataclass
class ErrorEntry:
    at: str
    tool: str
    digest: str
    count: int
    error: str

    def line(self) -> str:
        seen = f"seen {self.count} times"
        return f"- {self.at}{SEP}`{self.tool}`{SEP}args {self.digest}{SEP}{seen}{SEP}{self.error}"

    def key(self) -> tuple[str, str, str]:
        return (self.tool, self.digest, self.error.lower())


def _fit(header: str, lines: list[str], cap: int) -> list[str]:
    """Drop the oldest lines until the file fits its cap."""
    while lines and len((header + "".join(f"{line}\n" for line in lines)).encode("utf-8")) > cap:
        lines = lines[1:]
    return lines


class Learnings:
    def __init__(self, workspace_root: Path) -> None:
        self.folder = workspace_root / "learnings"
        self.errors_path = self.folder / "errors.md"
        self.corrections_path = self.folder / "corrections.md"
        self._lock = threading.Lock()

    def _lines(self, path: Path) -> list[str]:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [line for line in text.splitlines() if line.startswith("- ")]

    def _save(self, path: Path, header: str, lines: list[str], cap: int) -> None:
        kept = _fit(header, lines, cap)
        atomic_write_bytes(path, (header + "".join(f"{line}\n" for line in kept)).encode("utf-8"))

    def record_error(self, tool: str, arguments: Any, error: str) -> bool:
        """Record a tool failure; returns False when it was already known (its count goes up)."""
        entry = ErrorEntry(_now(), tool, argument_digest(arguments), 1, _one_line(error))
        with self._lock:
            lines = self._lines(self.errors_path)
            for index, line in enumerate(lines):
                match = _ERROR_LINE.match(line)
                if match is None:
                    continue
                known = ErrorEntry(
                    match["at"], match["tool"], match["digest"], int(match["n"]), match["error"]
                )
                if known.key() == entry.key():
                    known.count += 1
                    known.at = entry.at
                    lines[index] = known.line()
                    self._save(self.errors_path, ERRORS_HEADER, lines, ERRORS_CAP)
                    return False
            lines.append(entry.line())
            self._save(self.errors_path, ERRORS_HEADER, lines, ERRORS_CAP)
            return True

    def record_correction(self, correction: str) -> bool:
        """Record a correction; returns False when the same correction is already there."""
        text = _one_line(correction)
        if not text:
            raise ValueError("the correction is empty: say what was wrong and what is right")
        with self._lock:
            lines = self._lines(self.corrections_path)
            for line in lines:
                match = _CORRECTION_LINE.match(line)
                if match is not None and match["text"].lower() == text.lower():
                    return False
            lines.append(f"- {_now()}{SEP}{text}")
            self._save(self.corrections_path, CORRECTIONS_HEADER, lines, CORRECTIONS_CAP)
            return True

    def render(self) -> str:
        """The prompt section: corrections first (they matter most), then known tool failures."""
        corrections = []
        for line in self._lines(self.corrections_path):
            match = _CORRECTION_LINE.match(line)
            corrections.append(f"- {match['text']}" if match else line)
        errors = []
        for line in self._lines(self.errors_path):
            match = _ERROR_LINE.match(line)
            errors.append(
                f"- `{match['tool']}` (args {match['digest']}): {match['error']}" if match else line
            )
        parts = []
        if corrections:
            parts.append("Corrections you were given (follow them):\n" + "\n".join(corrections))
        if errors:
            parts.append("Tool calls that failed before (avoid repeating them):\n" + "\n".join(errors))
        return "\n\n".join(parts)

"""Saved facts in the daily log `workspace/memory/YYYY-MM-DD.md`, one line each, appended.

The line format matches the rest of the daily log (`- HH:MM:SS · <kind> · <text>`):

    - 14:02:11 · memory · [fact 42] The user's locker code is 4512 (user_stated, personal)

The `[fact N]` marker lets a forget redact the line in place (the only rewrite the log ever
sees) and lets the workspace index skip fact lines, which the store already answers for. A
forget also redacts the other lines of the log that state the fact (an item's outcome that
quoted it, say).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from agent_runtime.memory.forgetting import FORGOTTEN, states_any
from agent_runtime.memory.models import Fact
from agent_runtime.memory.text import one_line
from agent_runtime.safety.redaction import redact
from agent_runtime.workspace.versioned import atomic_write_bytes

FACT_LINE = re.compile(r"^- (?P<time>[^·]*)· memory · \[fact (?P<id>\d+)\]")
LOG_LINE = re.compile(r"^(?P<head>- [^·]*· [^·]+ · )(?P<text>.*)$")
MAX_LINE_CHARS = 400
REDACT_ATTEMPTS = 3


def is_fact_line(line: str) -> bool:
    return FACT_LINE.match(line) is not None


def _owned_like_folder(path: Path) -> None:
    """Give a file the owner of its folder when root wrote it (the orchestrator on the host), so
    the agent, which runs as another user, can still append to it."""
    if os.geteuid() != 0:
        return
    folder = path.parent.stat()
    mine = path.stat()
    if (mine.st_uid, mine.st_gid) != (folder.st_uid, folder.st_gid):
        os.chown(path, folder.st_uid, folder.st_gid)


def _redacted_line(line: str, wanted: set[str], texts: list[str]) -> str | None:
    """The line with its text forgotten, when it is one of the facts' or states one of `texts`."""
    match = FACT_LINE.match(line)
    if match is not None and match["id"] in wanted:
        if line.rstrip().endswith(FORGOTTEN):
            return None
        return f"- {match['time']}· memory · [fact {match['id']}] {FORGOTTEN}\n"
    entry = LOG_LINE.match(line.rstrip("\n"))
    if texts and entry is not None and entry["text"] != FORGOTTEN and states_any(entry["text"], texts):
        return f"{entry['head']}{FORGOTTEN}\n"
    return None


class FactLog:
    def __init__(self, workspace_root: Path, clock: Callable[[], datetime] | None = None) -> None:
        self.folder = workspace_root / "memory"
        self._now = clock or (lambda: datetime.now(UTC))

    def append(self, fact: Fact) -> Path:
        when = self._now()
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{when:%Y-%m-%d}.md"
        text = one_line(redact(fact.text).text, MAX_LINE_CHARS)
        header = f"# {when:%Y-%m-%d}\n\n" if not path.exists() else ""
        line = f"{header}- {when:%H:%M:%S} · memory · [fact {fact.id}] {text} ({fact.source.value}, {fact.category})\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
        if header:
            _owned_like_folder(path)
        return path

    def redact(self, fact_ids: Iterable[int], texts: Sequence[str] = ()) -> int:
        """Replace the text of these facts' lines, and of any line stating one of `texts`, with
        "(forgotten)"; returns lines changed."""
        wanted = {str(fact_id) for fact_id in fact_ids}
        if not (wanted or texts) or not self.folder.is_dir():
            return 0
        changed = 0
        for path in sorted(self.folder.glob("*.md")):
            changed += self._redact_file(path, wanted, [text for text in texts if text.strip()])
        return changed

    def _redact_file(self, path: Path, wanted: set[str], texts: list[str]) -> int:
        for _ in range(REDACT_ATTEMPTS):
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                return 0
            lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
            changed = 0
            for number, line in enumerate(lines):
                redacted = _redacted_line(line, wanted, texts)
                if redacted is not None:
                    lines[number] = redacted
                    changed += 1
            if not changed:
                return 0
            # An append racing this rewrite would be lost by the rename: retry if the file grew.
            if path.stat().st_size != len(data):
                continue
            atomic_write_bytes(path, "".join(lines).encode("utf-8"))
            _owned_like_folder(path)
            return changed
        return 0

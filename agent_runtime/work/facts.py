"""Where flushed facts go: MEMORY.md (through the workspace write path) and the memory store.

MEMORY.md keeps extracted facts in its own section at the end, so what the agent or the
operator wrote above it is never touched. When the file would pass its cap, the oldest extracted
facts leave it, but only after the memory store confirmed it holds them: a fact is always in
MEMORY.md, in the store, or in both.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from agent_runtime.workspace.versioned import CAPS, CapExceeded, Workspace

SECTION = "## Extracted facts"
MEMORY_FILE = "MEMORY.md"


class FactStoreError(RuntimeError):
    """The memory store could not take the facts or the episode."""


class FactStore(Protocol):
    """The seam to the memory store: facts with source `extracted`, and compaction episodes."""

    def save_facts(self, facts: Sequence[str], turn_ids: Sequence[str]) -> None:
        """Store every fact or raise FactStoreError."""

    def add_episode(self, start: str, end: str, turn_ids: Sequence[str], summary: str) -> None:
        """Store a compacted stretch of history or raise FactStoreError."""


class MemoryFileFull(RuntimeError):
    """MEMORY.md cannot take the facts and the store cannot take the overflow."""


def normalize_fact(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".")


def clean_fact(text: str) -> str:
    return " ".join(text.split()).strip()


_BULLET = re.compile(r"^\s*[-*]\s+(.*)$")


def _split(text: str) -> tuple[str, list[str], str]:
    """(text before the section, fact lines of the section, text after it)."""
    lines = text.splitlines()
    try:
        start = lines.index(SECTION)
    except ValueError:
        return text, [], ""
    end = start + 1
    while end < len(lines) and not lines[end].startswith("## "):
        end += 1
    facts = [match[1] for line in lines[start + 1 : end] if (match := _BULLET.match(line))]
    before = "\n".join(lines[:start])
    after = "\n".join(lines[end:])
    return before, facts, after


def _join(before: str, facts: list[str], after: str) -> str:
    parts = [before.rstrip("\n")] if before.strip() else []
    if facts:
        parts.append(SECTION + "\n" + "\n".join(f"- {fact}" for fact in facts))
    if after.strip():
        parts.append(after.strip("\n"))
    return "\n\n".join(parts) + "\n" if parts else ""


class MemoryFileFacts:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def facts(self) -> list[str]:
        return _split(self.workspace.read(MEMORY_FILE))[1]

    def add(self, facts: Sequence[str], overflow: FactStore | None) -> list[str]:
        """Append the facts not already in MEMORY.md; returns the ones added.

        Raises MemoryFileFull when they do not fit and `overflow` (the store) is missing or
        refuses the evicted facts; MEMORY.md is unchanged then.
        """
        # Under the file's lock: a maintenance job rewriting MEMORY.md meanwhile must not be undone.
        with self.workspace.locked(MEMORY_FILE):
            return self._add(facts, overflow)

    def _add(self, facts: Sequence[str], overflow: FactStore | None) -> list[str]:
        current = self.workspace.read(MEMORY_FILE)
        known = {normalize_fact(line) for line in current.splitlines() if line.strip()}
        known |= {normalize_fact(match[1]) for line in current.splitlines() if (match := _BULLET.match(line))}
        new = []
        for fact in (clean_fact(f) for f in facts):
            key = normalize_fact(fact)
            if fact and key not in known:
                known.add(key)
                new.append(fact)
        if not new:
            return []
        before, section, after = _split(current)
        section = section + new
        content = _join(before, section, after)
        cap = CAPS[MEMORY_FILE] or 0
        evicted: list[str] = []
        while len(content.encode("utf-8")) > cap and section:
            evicted.append(section.pop(0))
            content = _join(before, section, after)
        if len(content.encode("utf-8")) > cap:
            raise MemoryFileFull(f"{MEMORY_FILE} is full even without extracted facts")
        if evicted:
            if overflow is None:
                raise MemoryFileFull(f"{MEMORY_FILE} is full and no memory store can take the oldest facts")
            try:
                overflow.save_facts(evicted, [])
            except FactStoreError as failed:
                raise MemoryFileFull(f"{MEMORY_FILE} is full and the memory store failed: {failed}") from None
        try:
            self.workspace.write(MEMORY_FILE, content, "agent", f"{len(new)} fact(s) extracted from history")
        except CapExceeded as over:
            raise MemoryFileFull(str(over)) from None
        return new

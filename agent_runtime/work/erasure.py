"""A forgotten fact leaves every file of the agent's own storage in the same operation.

The memory store erases the fact from `memory.db` (`MemoryStore.forget`); this module finds
the copies the rest of `/data` holds and rewrites them at once:
- the workspace files (MEMORY.md above all, injected into every prompt): a bullet line that
  states the fact is removed, a sentence elsewhere becomes "(forgotten)"; written through the
  versioned write (author `job`), so the orchestrator's copy, the truth, changes too; earlier
  versions kept in this storage are rewritten the same way;
- the daily logs (`workspace/memory/`): a line stating it keeps its time and kind, its text
  becomes "(forgotten)";
- the turn log (`history/*.jsonl`), the context state (`.runtime/context.json`: the summary
  of compacted history and the turns in the prompt), the processed-items log
  (`.runtime/processed.jsonl`) and the checkpoint strategy's records (`cognition/`): each
  string in them that states the fact, tool-call arguments included, has those sentences
  replaced;
- any other text file the agent keeps in its workspace (notes it wrote, learnings).

"States" is `forgetting.states_any`: every word of the fact holding a digit and three quarters
of its other distinctive words are in the sentence. A file is read only when it holds the
rarest word of a fact, so a forget over a long history stays cheap.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from agent_runtime.cognition.files import CognitionFiles
from agent_runtime.cognition.forgetting import forget_in_files
from agent_runtime.memory.factlog import FactLog
from agent_runtime.memory.forgetting import (
    FORGOTTEN,
    forget_in_versions,
    mentions_probe,
    probes,
    scrub,
    scrub_json,
    scrub_lines,
    states_any,
)
from agent_runtime.workspace.versioned import (
    READ_ONLY,
    WORKSPACE_FILES,
    Workspace,
    WorkspaceError,
    atomic_write_bytes,
)

log = logging.getLogger(__name__)

# The store and its SQLite companions are erased by the store itself.
STORE_FILES = frozenset({"memory.db", "memory.db-wal", "memory.db-shm", "memory.db-journal"})
SKIPPED_FOLDERS = frozenset({"versions", "snapshots", "restore"})
TEXT_SUFFIXES = frozenset({".md", ".txt", ".json", ".jsonl"})
MAX_FILE_BYTES = 64 * 1024 * 1024
REWRITE_ATTEMPTS = 3
FORGET_REASON = "a forgotten fact left it"


class Eraser:
    """Rewrites the copies of forgotten facts in one agent's storage (`data_dir`)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.workspace = Workspace(data_dir)

    def erase(self, facts: Sequence[str]) -> list[str]:
        """Rewrite every file that states one of the facts; the files changed (relative paths)."""
        facts = [fact for fact in facts if fact.strip() and fact.strip() != FORGOTTEN]
        wanted = probes(facts)
        if not wanted:
            return []
        changed = forget_in_files(CognitionFiles(self.data_dir), facts)
        if FactLog(self.workspace.root).redact((), facts):
            changed.append("workspace/memory/")
        changed += self._workspace_files(facts, wanted)
        for path in self._files():
            if self._rewrite(path, facts, wanted):
                changed.append(path.relative_to(self.data_dir).as_posix())
        return sorted(set(changed))

    def _workspace_files(self, facts: Sequence[str], wanted: Sequence[str]) -> list[str]:
        changed = []
        for name in WORKSPACE_FILES:
            text = self.workspace.read(name)
            if name in READ_ONLY or not mentions_probe(text, wanted):
                continue
            cleaned = scrub_lines(text, facts)
            if cleaned == text:
                continue
            try:
                self.workspace.write(name, cleaned, "job", FORGET_REASON)
            except WorkspaceError as refused:
                # The working copy is cleaned anyway; the next sync brings the truth's answer.
                log.warning("%s not rewritten after a forget: %s", name, refused)
                self.workspace.mirror(name, cleaned)
            changed.append(f"workspace/{name}")
        changed += self._versions(facts)
        return changed

    def _versions(self, facts: Sequence[str]) -> list[str]:
        return ["versions/"] if forget_in_versions(self.workspace, facts) else []

    def _files(self) -> Iterator[Path]:
        top_level = {self.workspace.root / name for name in WORKSPACE_FILES}
        daily = self.workspace.root / "memory"
        for folder, dirs, names in os.walk(self.data_dir):
            here = Path(folder)
            if here == self.data_dir:
                dirs[:] = [d for d in dirs if d not in SKIPPED_FOLDERS]
            if here == daily:
                continue  # the daily logs, done by FactLog with their line format kept
            for name in names:
                path = here / name
                if name in STORE_FILES or path in top_level or path.suffix not in TEXT_SUFFIXES:
                    continue
                if path.is_symlink() or not path.is_file():
                    continue
                yield path

    def _rewrite(self, path: Path, facts: Sequence[str], wanted: Sequence[str]) -> bool:
        for _ in range(REWRITE_ATTEMPTS):
            try:
                if path.stat().st_size > MAX_FILE_BYTES:
                    log.warning("%s is too large to scrub after a forget", path)
                    return False
                data = path.read_bytes()
            except FileNotFoundError:
                return False
            text = data.decode("utf-8", errors="replace")
            if not mentions_probe(text, wanted):
                return False
            cleaned = _cleaner(path)(text, facts)
            if cleaned == text:
                return False
            # An append racing this rewrite would be lost by the rename: retry if the file grew.
            if path.stat().st_size != len(data):
                continue
            atomic_write_bytes(path, cleaned.encode("utf-8"))
            return True
        return False


def _scrub_json_text(text: str, facts: Sequence[str]) -> str:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return scrub(text, facts)
    cleaned = scrub_json(value, facts)
    return text if cleaned == value else json.dumps(cleaned, ensure_ascii=False)


def _scrub_json_lines(text: str, facts: Sequence[str]) -> str:
    lines = text.splitlines(keepends=True)
    out = []
    for line in lines:
        body = line.rstrip("\n")
        if not body.strip() or not states_any(body, facts):
            out.append(line)
            continue
        out.append(_scrub_json_text(body, facts) + line[len(body) :])
    return "".join(out)


def _cleaner(path: Path) -> Callable[[str, Sequence[str]], str]:
    if path.suffix == ".jsonl":
        return _scrub_json_lines
    if path.suffix == ".json":
        return _scrub_json_text
    return scrub_lines

"""Which INTERFACE.md is in force for each agent, re-read only when the file changes.

The contract in force is the agent's own `workspace/INTERFACE.md` on the host when it parses;
a broken rewrite never replaces the last good one; with no usable file, the text fleet.yaml
seeds is in force.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_runtime import ContractError, Interface, parse_interface

INTERFACE_FILE = "INTERFACE.md"
FileStamp = tuple[int, int, int]
WorkspaceLocator = Callable[[str], Path]
SeedLocator = Callable[[str], str]


@dataclass(frozen=True)
class ContractState:
    """The contract in force for one agent, where it came from, and what is wrong with the file."""

    interface: Interface
    source: str
    problem: str | None = None


@dataclass
class _Entry:
    stamp: FileStamp | None
    state: ContractState


class InterfaceStore:
    """Contracts per agent, keyed on the file's (mtime, size, inode) so a request costs one stat."""

    def __init__(self, seed_of: SeedLocator, workspace_of: WorkspaceLocator) -> None:
        self._seed_of = seed_of
        self._workspace_of = workspace_of
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._seeded_parsed: dict[tuple[str, str], ContractState] = {}
        self._paths: dict[str, Path] = {}

    def current(self, agent: str) -> Interface:
        return self.state(agent).interface

    def state(self, agent: str) -> ContractState:
        path = self._paths.get(agent)
        if path is None:
            path = self._paths[agent] = self._workspace_of(agent) / INTERFACE_FILE
        stamp = _stamp(path)
        if stamp is None:
            return self.seeded(agent)
        with self._lock:
            entry = self._entries.get(agent)
            if entry is not None and entry.stamp == stamp:
                return entry.state
        state = self._load(agent, path, entry.state if entry else None)
        with self._lock:
            self._entries[agent] = _Entry(stamp, state)
        return state

    def _load(self, agent: str, path: Path, previous: ContractState | None) -> ContractState:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return self.seeded(agent)
        except (OSError, UnicodeDecodeError) as exc:
            return self._keep(agent, previous, f"{path}: unreadable: {exc}")
        try:
            return ContractState(parse_interface(text), str(path))
        except ContractError as exc:
            return self._keep(agent, previous, f"{path}: {exc}")

    def _keep(self, agent: str, previous: ContractState | None, problem: str) -> ContractState:
        """A broken file leaves the last good contract in force (a state's interface always is)."""
        base = previous if previous is not None else self.seeded(agent)
        return ContractState(base.interface, base.source, problem)

    def seeded(self, agent: str) -> ContractState:
        """The contract fleet.yaml seeds (parsed once per distinct text: the fleet can be re-applied)."""
        text = self._seed_of(agent)
        with self._lock:
            cached = self._seeded_parsed.get((agent, text))
        if cached is not None:
            return cached
        try:
            state = ContractState(parse_interface(text), "fleet.yaml")
        except ContractError as exc:
            state = ContractState(Interface(body=text), "fleet.yaml", f"fleet.yaml interface: {exc}")
        with self._lock:
            self._seeded_parsed[(agent, text)] = state
        return state


def _stamp(path: Path) -> FileStamp | None:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)

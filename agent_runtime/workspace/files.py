"""File access for the model, confined to the agent's workspace folder.

Paths are relative to the workspace root. Absolute paths, `..` components and symlinks anywhere
on the path are refused, so a tool call cannot reach outside the folder. The capped identity
files and the learnings are not writable here: they have their own tools, which enforce caps,
validation, versions and deduplication; `cognition/` (working and semantic memory) is written
by the memory jobs only; `screenshots/` by the browser_screenshot tool only. Binary files are
listed but not read as text.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agent_runtime.workspace.binary import PNG_MAGIC, SCREENSHOTS
from agent_runtime.workspace.versioned import WORKSPACE_FILES, atomic_write_bytes

MANAGED_FOLDERS = frozenset({"learnings"})
# Written by the memory jobs only (the checkpoint strategy's working and semantic memory).
JOB_FOLDERS = frozenset({"cognition"})
DEFAULT_READ_LIMIT = 64 * 1024
BINARY_SNIFF = 8 * 1024  # a NUL byte this early: not text


class FileAccessError(ValueError):
    """A file tool request was refused; the message names the path and the reason."""


class PathEscape(FileAccessError):
    pass


class SymlinkRefused(FileAccessError):
    pass


class QuotaExceeded(FileAccessError):
    def __init__(self, path: str, needed: int, quota: int) -> None:
        self.needed = needed
        self.quota = quota
        super().__init__(
            f"writing {path} would bring the workspace to {needed} bytes, over its quota of {quota} bytes"
        )


class ProtectedFile(FileAccessError):
    pass


@dataclass(frozen=True)
class Entry:
    path: str
    size: int
    is_dir: bool


class WorkspaceFiles:
    """Read, write and list files under `root` within a total size quota."""

    def __init__(self, root: Path, quota_bytes: int) -> None:
        self.root = root
        self.quota_bytes = quota_bytes

    def _parts(self, relative: str) -> tuple[str, ...]:
        if not relative or "\x00" in relative:
            raise PathEscape(f"invalid path {relative!r}: give a path relative to the workspace")
        pure = PurePosixPath(relative)
        if pure.is_absolute():
            raise PathEscape(f"{relative!r} is absolute: paths are relative to the workspace root")
        parts = tuple(part for part in pure.parts if part != ".")
        if ".." in parts:
            raise PathEscape(f"{relative!r} contains '..': paths must stay inside the workspace")
        return parts

    def _walk(self, parts: tuple[str, ...], relative: str, *, create_parents: bool) -> Path:
        """Follow `parts` from the root, refusing symlinks at every step."""
        current = self.root
        for index, part in enumerate(parts):
            current = current / part
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                is_parent = index < len(parts) - 1
                if create_parents and is_parent:
                    current.mkdir()
                continue
            if stat.S_ISLNK(mode):
                raise SymlinkRefused(f"{relative!r} goes through a symlink ({part}); symlinks are refused")
        return current

    def resolve(self, relative: str, *, create_parents: bool = False) -> Path:
        return self._walk(self._parts(relative), relative, create_parents=create_parents)

    def read(self, relative: str, limit: int = DEFAULT_READ_LIMIT) -> str:
        path = self.resolve(relative)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            raise FileAccessError(f"{relative!r} does not exist") from None
        except IsADirectoryError:
            raise FileAccessError(f"{relative!r} is a folder: use list_files") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise FileAccessError(f"{relative!r} is a folder or a special file: use list_files")
        with os.fdopen(fd, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(limit + 1)
        if data.startswith(PNG_MAGIC) or b"\x00" in data[:BINARY_SNIFF]:
            kind = "a PNG image" if data.startswith(PNG_MAGIC) else "binary"
            raise FileAccessError(
                f"{relative!r} is {kind} ({size} bytes): it cannot be read as text; list_files shows it"
            )
        text = data[:limit].decode("utf-8", errors="replace")
        if len(data) > limit:
            text += f"\n[... cut: only the first {limit} bytes of {relative} are shown]"
        return text

    def write(self, relative: str, content: str) -> int:
        parts = self._parts(relative)
        if len(parts) == 1 and parts[0] in WORKSPACE_FILES:
            raise ProtectedFile(
                f"{parts[0]} is a capped workspace file: change it with the update_workspace tool"
            )
        if parts[0] in MANAGED_FOLDERS:
            raise ProtectedFile(f"{parts[0]}/ is managed by the runtime: use record_correction")
        if parts[0] == SCREENSHOTS:
            raise ProtectedFile(
                f"{SCREENSHOTS}/ holds the browser's screenshots: take one with browser_screenshot"
            )
        if parts[0].lower() in JOB_FOLDERS:
            raise ProtectedFile(
                f"{parts[0]}/ is written by the memory jobs only: propose a change with propose_memory_change"
            )
        data = content.encode("utf-8")
        path = self._walk(parts, relative, create_parents=False)
        old_size = self._existing_size(path, relative)
        needed = self.usage() - old_size + len(data)
        if needed > self.quota_bytes:
            raise QuotaExceeded(relative, needed, self.quota_bytes)
        self._walk(parts, relative, create_parents=True)
        atomic_write_bytes(path, data)
        return len(data)

    def _existing_size(self, path: Path, relative: str) -> int:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return 0
        if stat.S_ISDIR(info.st_mode):
            raise FileAccessError(f"{relative!r} is a folder; give a file path")
        return info.st_size

    def list(self, relative: str = ".") -> list[Entry]:
        base = self.root if relative in ("", ".") else self.resolve(relative)
        if not base.is_dir() or base.is_symlink():
            raise FileAccessError(f"{relative!r} is not a folder in the workspace")
        entries = []
        for child in sorted(base.iterdir()):
            if child.name.startswith(".") or child.is_symlink():
                continue
            info = child.lstat()
            entries.append(
                Entry(
                    path=child.relative_to(self.root).as_posix(),
                    size=info.st_size if not child.is_dir() else 0,
                    is_dir=child.is_dir(),
                )
            )
        return entries

    def usage(self) -> int:
        total = 0
        for folder, _dirs, names in os.walk(self.root, followlinks=False):
            for name in names:
                info = os.lstat(os.path.join(folder, name))
                if stat.S_ISREG(info.st_mode):
                    total += info.st_size
        return total

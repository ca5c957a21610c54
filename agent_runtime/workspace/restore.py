"""Restoring the agent's own files from a snapshot the orchestrator hands over its channel.

The reverse of agent_runtime.workspace.snapshot: the orchestrator never opens a path in the
agent's storage, so a restore (a backup restored onto another machine, an agent moved to
another node with a fresh volume) is written by the agent itself:

    restore.begin  RestorePlan {"files": [{"path", "size", "sha256"}]}  -> RestoreStaged
    restore.write  RestoreChunk {"path", "offset", "data"}               -> RestoreStaged
    restore.commit {}                                                    -> RestoreApplied
    restore.abort  {}                                                    -> {"dropped": bool}

Every file is staged under `.runtime/restore/` first. The plan is checked before a byte is
written: only the agent's own paths (those a snapshot holds), plain relative paths, sizes
within a cap. Chunks come in order and never beyond the size declared. Commit checks every
staged file's size and SHA-256, then replaces what the storage holds at each of the plan's own
paths (memory.db's WAL included: a WAL left beside another database would be replayed into
it), never following a link: a link in the way is removed, not written through. The agent then
restarts in place so that nothing it holds open refers to the files it replaced.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import shutil
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from agent_runtime.protocol import AgentOp, RestoreApplied, RestoreChunk, RestorePlan, RestoreStaged
from agent_runtime.workspace.snapshot import MEMORY_DB, OWN_FILES, OWN_FOLDERS

STAGING_DIR = ".runtime/restore"
MAX_RESTORE_BYTES = 4 * 1024**3
"""A plan larger than this is refused before anything is written."""
MAX_FILES = 100_000
RESTORE_OPS = frozenset(
    {AgentOp.RESTORE_BEGIN, AgentOp.RESTORE_WRITE, AgentOp.RESTORE_COMMIT, AgentOp.RESTORE_ABORT}
)
RESTART_DELAY_S = 0.5
"""Time for the answer to the commit to leave before the process is replaced."""
_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC


class RestoreError(Exception):
    """The restore was refused; the message names the file and why. Nothing was replaced."""


def own_root(path: str) -> str:
    """The own path of the storage that `path` belongs to (memory.db, a folder, a file), or
    RestoreError when it is not a plain relative path to one of the agent's own files."""
    if not path or any(part in ("..", ".", "") for part in path.split("/")):
        raise RestoreError(f"{path!r} is not a plain relative path")
    if path == MEMORY_DB or path in OWN_FILES:
        return path
    for folder in OWN_FOLDERS:
        if path.startswith(folder + "/"):
            return folder
    raise RestoreError(f"{path!r} is not one of the agent's own files")


def _real_dir(root: Path, relative: PurePosixPath) -> Path:
    """root/relative as a real folder, made where missing; RestoreError at any link on the way."""
    current = root
    for part in relative.parts:
        current = current / part
        try:
            mode = current.lstat().st_mode
        except FileNotFoundError:
            current.mkdir(mode=0o700)
            continue
        if not stat.S_ISDIR(mode):
            raise RestoreError(f"{current.relative_to(root)} is in the way of the restore (not a folder)")
    return current


def _remove(path: Path) -> None:
    """Whatever is at `path`, without following a link."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)
    else:
        path.unlink()


class Restores:
    """Stages, checks and applies the one restore of an agent's own storage."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.root = data_dir / STAGING_DIR
        self._plan: dict[str, tuple[int, str]] = {}

    def begin(self, plan: RestorePlan) -> RestoreStaged:
        planned: dict[str, tuple[int, str]] = {}
        for entry in plan.files:
            own_root(entry.path)
            if entry.path in planned:
                raise RestoreError(f"{entry.path!r} is listed twice")
            planned[entry.path] = (entry.size, entry.sha256.lower())
        total = sum(size for size, _ in planned.values())
        if len(planned) > MAX_FILES or total > MAX_RESTORE_BYTES:
            raise RestoreError(
                f"the restore holds {len(planned)} files and {total} bytes; at most {MAX_FILES} "
                f"files and {MAX_RESTORE_BYTES} bytes are taken"
            )
        self.abort()
        _real_dir(self.data_dir, PurePosixPath(STAGING_DIR))
        self._plan = planned
        return RestoreStaged(received=0)

    def write(self, chunk: RestoreChunk) -> RestoreStaged:
        if chunk.path not in self._plan:
            raise RestoreError(f"{chunk.path!r} is not in the restore begun (or none was begun)")
        size, _ = self._plan[chunk.path]
        try:
            data = base64.b64decode(chunk.data, validate=True)
        except binascii.Error:
            raise RestoreError(f"{chunk.path}: the chunk at {chunk.offset} is not base64") from None
        _real_dir(self.data_dir, PurePosixPath(STAGING_DIR))
        staged = self._staged(chunk.path)
        have = staged.lstat().st_size if staged.exists() else 0
        if chunk.offset != have:
            raise RestoreError(f"{chunk.path}: a chunk at {chunk.offset} came when {have} bytes were staged")
        if have + len(data) > size:
            raise RestoreError(f"{chunk.path}: more than the {size} bytes listed for it")
        fd = os.open(staged, _OPEN_FLAGS, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        return RestoreStaged(path=chunk.path, received=have + len(data))

    def commit(self) -> RestoreApplied:
        if not self._plan:
            raise RestoreError("no restore was begun")
        total = 0
        for path, (size, sha256) in self._plan.items():
            total += self._check(path, size, sha256)
        for own in sorted({own_root(path) for path in self._plan}):
            if own == MEMORY_DB:
                for stale in ("-wal", "-shm", "-journal"):
                    _remove(self.data_dir / (MEMORY_DB + stale))
            _remove(self.data_dir / own)
        for path in self._plan:
            relative = PurePosixPath(path)
            folder = _real_dir(self.data_dir, relative.parent)
            fd = os.open(self._staged(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(self._staged(path), folder / relative.name)
        applied = RestoreApplied(files=len(self._plan), bytes=total, restarting=True)
        self.abort()
        return applied

    def abort(self) -> bool:
        self._plan = {}
        if not self.root.exists() and not self.root.is_symlink():
            return False
        _remove(self.root)
        return True

    def _staged(self, path: str) -> Path:
        """The staged file of `path`: flat under the staging folder, so no folder of the plan is
        made before commit."""
        return self.root / hashlib.sha256(path.encode()).hexdigest()

    def _check(self, path: str, size: int, sha256: str) -> int:
        staged = self._staged(path)
        digest = hashlib.sha256()
        try:
            fd = os.open(staged, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            if size == 0 and sha256 == hashlib.sha256(b"").hexdigest():
                os.close(os.open(staged, _OPEN_FLAGS, 0o600))
                return 0
            raise RestoreError(f"{path}: nothing of it was received") from None
        with os.fdopen(fd, "rb") as source:
            received = 0
            for block in iter(lambda: source.read(1024 * 1024), b""):
                digest.update(block)
                received += len(block)
        if received != size or digest.hexdigest() != sha256:
            raise RestoreError(
                f"{path}: {received} bytes with sum {digest.hexdigest()[:12]} were received, not the "
                f"{size} bytes with sum {sha256[:12]} listed"
            )
        return received


def restart_in_place_soon(before: Callable[[], None] = lambda: None) -> None:
    """Replace this process with a fresh one (same pid, as an idle release does) once the
    commit's answer has left: the memory store, the worker and every open file start again on
    the restored files, and no engine or orchestrator has to restart the agent. `before` runs
    first (the channel is retired there, so that no request is lost in the restart)."""

    def restart() -> None:
        before()
        sys.stderr.flush()
        sys.stdout.flush()
        os.execve(sys.executable, sys.orig_argv, dict(os.environ))

    threading.Timer(RESTART_DELAY_S, restart).start()

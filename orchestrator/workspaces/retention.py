"""Workspace version retention: history is kept, but not without bound.

`limits.workspace_versions` keeps the newest N versions of each file and
`limits.workspace_version_age` drops versions older than that; the newest version always stays,
so the live file is always one of its recorded versions. Pruned versions leave the index and
their content files are deleted; version numbers are never reused.

The version folder follows the layout of `agent_runtime.Workspace` (index.jsonl plus one
`<n>.md` per version; `<n>.png` for the browser's screenshots, which keep `screenshots_kept`). It is opened by directory descriptor without following links, so a link
planted in place of a version folder or file is not followed out of it.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import ValidationError

from agent_runtime import FileVersion, Workspace, normalize_name
from orchestrator.config.limits import LimitsConfig

INDEX = "index.jsonl"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def blob_name(version: int, suffix: str = ".md") -> str:
    return f"{version:06d}{suffix}"


def versions_to_drop(
    versions: list[FileVersion], keep: int, max_age_s: float | None, now: datetime
) -> list[FileVersion]:
    """Which versions the rule drops: beyond the newest `keep`, or older than max_age_s; never the newest."""
    if not versions:
        return []
    ordered = sorted(versions, key=lambda v: v.version)
    newest = ordered[-1]
    cutoff = now - timedelta(seconds=max_age_s) if max_age_s else None
    kept_by_count = {v.version for v in ordered[-keep:]}
    return [
        v
        for v in ordered
        if v is not newest and (v.version not in kept_by_count or (cutoff is not None and v.at < cutoff))
    ]


@contextlib.contextmanager
def _open_dir(path: str | Path, dir_fd: int | None = None) -> Iterator[int]:
    fd = os.open(path, _DIR_FLAGS, dir_fd=dir_fd)
    try:
        yield fd
    finally:
        os.close(fd)


def _read_index(dir_fd: int) -> tuple[list[str], list[FileVersion]]:
    fd = os.open(INDEX, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as handle:
        lines = handle.read().decode("utf-8").splitlines()
    versions: list[FileVersion] = []
    for line in lines:
        with contextlib.suppress(ValidationError):
            versions.append(FileVersion.model_validate_json(line))
    return lines, versions


def _replace_index(dir_fd: int, lines: list[str]) -> None:
    temporary = f".{INDEX}.pruning"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary, dir_fd=dir_fd)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as handle:
        handle.write("".join(line + "\n" for line in lines).encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, INDEX, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def prune_file_history(
    workspace: Workspace, name: str, limits: LimitsConfig, now: datetime | None = None
) -> int:
    """Apply the retention rule to one file's history; the number of versions dropped."""
    canonical = normalize_name(name)
    with workspace.locked(canonical):
        return prune_versions(
            workspace.versions_root,
            canonical.removesuffix(".md"),
            limits.workspace_versions,
            limits.workspace_version_age_s,
            now or datetime.now(UTC),
        )


def prune_versions(
    versions_root: Path,
    stem: str,
    keep: int,
    max_age_s: float | None,
    now: datetime,
    suffix: str = ".md",
) -> int:
    """Drop the versions of `versions_root/<stem>/` the rule drops; how many. The caller holds
    the folder's write lock."""
    try:
        with _open_dir(versions_root) as root_fd, _open_dir(stem, root_fd) as dir_fd:
            lines, versions = _read_index(dir_fd)
            dropped = versions_to_drop(versions, keep, max_age_s, now)
            if not dropped:
                return 0
            gone = {v.version for v in dropped}
            kept = [line for line in lines if line.strip() and not _is_version_in(line, gone)]
            _replace_index(dir_fd, kept)
            for version in gone:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(blob_name(version, suffix), dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    except OSError as refused:
        # ELOOP: a link stands where a folder or the index should be; leave it alone.
        if refused.errno == errno.ELOOP:
            return 0
        raise
    return len(gone)


def _is_version_in(line: str, versions: set[int]) -> bool:
    try:
        return FileVersion.model_validate_json(line).version in versions
    except ValidationError:
        return True  # a torn line is dropped along with the pruned versions

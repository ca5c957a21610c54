"""Telling a full disk from other failures, and how much space is left."""

from __future__ import annotations

import errno
import shutil
import sqlite3
from pathlib import Path

NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_disk_full(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        return code == sqlite3.SQLITE_FULL or "disk is full" in str(exc)
    return isinstance(exc, OSError) and exc.errno in NO_SPACE_ERRNOS


def free_bytes(path: Path) -> int | None:
    """Free bytes on the device of `path` (or of its nearest existing parent)."""
    for candidate in (path, *path.parents):
        try:
            return shutil.disk_usage(candidate).free
        except OSError:
            continue
    return None

"""Leftovers of writes that a kill cut short, removed when the orchestrator starts.

Every write of the orchestrator's own files is temp-file-then-rename, so a `*.tmp` at start is
never the only copy of anything; an unfinished backup's staging folder is removed too. Only
orchestrator-owned folders are walked (never `agent-data/`: the process runtime's agents write
there, and the agents clean their own storage when they start), and links are not followed.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from orchestrator.state.paths import StatePaths

log = logging.getLogger(__name__)

TEMP_SUFFIX = ".tmp"
BACKUP_STAGING_PREFIX = ".flotilla-backup-"
OWNED_FOLDERS = ("agents", "units", "backups")


def remove_leftover_temp_files(paths: StatePaths) -> list[Path]:
    removed: list[Path] = []
    if not paths.root.is_dir():
        return removed
    for entry in paths.root.iterdir():
        if entry.is_file() and not entry.is_symlink() and entry.name.endswith(TEMP_SUFFIX):
            removed.append(_remove(entry))
    for name in OWNED_FOLDERS:
        folder = paths.root / name
        if folder.is_dir() and not folder.is_symlink():
            removed.extend(_walk(folder))
    removed = [path for path in removed if not path.exists()]
    if removed:
        log.warning("removed %d leftover temporary file(s): %s", len(removed), [str(p) for p in removed[:5]])
    return removed


def _walk(folder: Path) -> list[Path]:
    removed: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        for name in list(dirnames):
            path = here / name
            if path.is_symlink():
                dirnames.remove(name)
            elif name.startswith(BACKUP_STAGING_PREFIX):
                shutil.rmtree(path, ignore_errors=True)
                dirnames.remove(name)
                removed.append(path)
        for name in filenames:
            path = here / name
            if name.endswith(TEMP_SUFFIX) and path.is_file() and not path.is_symlink():
                removed.append(_remove(path))
    return removed


def _remove(path: Path) -> Path:
    try:
        path.unlink()
    except OSError as failed:
        log.warning("cannot remove %s: %s", path, failed)
    return path

"""What a backup copies from the host side: the fleet folder's files, state.db and the
operator's copies. All of it is the orchestrator's own (never a path an agent can write)."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent_runtime import YamlRefused, load_yaml_file
from orchestrator.config.paths import FleetFolder, looks_like_path
from orchestrator.control.auth import forget_all_tokens
from orchestrator.state.db import Database

PROJECT_FILE = "PROJECT.md"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def fleet_folder_files(fleet_file: Path) -> list[Path]:
    """fleet.yaml, the files it names inside its folder (interfaces, seeds) and PROJECT.md.
    Nothing else of the folder: it may hold secrets (.env, keys) that a backup must not carry."""
    folder = FleetFolder(fleet_file.parent)
    found = {fleet_file.resolve()}
    try:
        data = load_yaml_file(fleet_file).data
    except YamlRefused:
        data = None
    for value in _strings(data):
        if not looks_like_path(value):
            continue
        try:
            target = folder.resolve(value)
        except ValueError:
            continue
        if target.is_file():
            found.add(target)
    project = fleet_file.parent / PROJECT_FILE
    if project.is_file() and not project.is_symlink():
        found.add(project.resolve())
    return sorted(found)


def fleet_file_version(fleet_file: Path) -> int | None:
    try:
        data = load_yaml_file(fleet_file).data
    except YamlRefused:
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, int) else None


def copy_state_db(source: Path, target: Path) -> int:
    """A consistent copy of state.db taken with SQLite's online backup API while the orchestrator
    writes, without token digests; its schema version (PRAGMA user_version)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    live = sqlite3.connect(source, timeout=30.0)
    try:
        copy = sqlite3.connect(target)
        try:
            live.backup(copy)
            version = int(copy.execute("PRAGMA user_version").fetchone()[0])
        finally:
            copy.close()
    finally:
        live.close()
    scrubbed = Database(target)
    try:
        forget_all_tokens(scrubbed)
        scrubbed.execute("PRAGMA journal_mode=DELETE")
        scrubbed.execute("VACUUM")
    finally:
        scrubbed.close()
    return version


def copy_tree(source: Path, target: Path) -> int:
    """Regular files of an orchestrator-owned folder (links skipped, temp files left); the count."""
    copied = 0
    if not source.is_dir():
        return copied
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames[:] = [d for d in dirnames if not (Path(dirpath) / d).is_symlink()]
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file() or name.endswith(".tmp"):
                continue
            destination = target / path.relative_to(source)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, destination)
            copied += 1
    return copied

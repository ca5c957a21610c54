"""How much space is left on the orchestrator's disk (`agent_runtime.is_disk_full` tells a full
disk from other failures, on both sides)."""

from __future__ import annotations

import shutil
from pathlib import Path


def free_bytes(path: Path) -> int | None:
    """Free bytes on the device of `path` (or of its nearest existing parent)."""
    for candidate in (path, *path.parents):
        try:
            return shutil.disk_usage(candidate).free
        except OSError:
            continue
    return None

"""The orchestrator's own state: one SQLite database (WAL) and the folders under .flotilla/.

`Database` and `StatePaths` load on first use: a quick command that only reads a path (`ps`
finds the orchestrator's address next to fleet.yaml) does not load the database layer."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestrator.state.db import Database
    from orchestrator.state.paths import StatePaths

_EXPORTS = {"Database": "orchestrator.state.db", "StatePaths": "orchestrator.state.paths"}

__all__ = ["Database", "StatePaths"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'orchestrator.state' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)

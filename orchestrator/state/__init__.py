"""The orchestrator's own state: one SQLite database (WAL) and the folders under .flotilla/."""

from orchestrator.state.db import Database
from orchestrator.state.paths import StatePaths

__all__ = ["Database", "StatePaths"]

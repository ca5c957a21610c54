"""fleet.yaml: typed models, loading with line numbers, and validation.

The names below load on first use: a command that needs one small module of this package (the
units `ps` formats sizes with) does not load every model of fleet.yaml."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestrator.config.fleet import ConfigError, ConfigProblem
    from orchestrator.config.loader import load_fleet
    from orchestrator.config.models import AgentConfig, FleetConfig

_EXPORTS = {
    "AgentConfig": "orchestrator.config.models",
    "ConfigError": "orchestrator.config.fleet",
    "ConfigProblem": "orchestrator.config.fleet",
    "FleetConfig": "orchestrator.config.models",
    "load_fleet": "orchestrator.config.loader",
}

__all__ = ["AgentConfig", "ConfigError", "ConfigProblem", "FleetConfig", "load_fleet"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'orchestrator.config' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)

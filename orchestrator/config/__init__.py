"""fleet.yaml: typed models, loading with line numbers, and validation."""

from orchestrator.config.fleet import ConfigError, ConfigProblem
from orchestrator.config.loader import load_fleet
from orchestrator.config.models import AgentConfig, FleetConfig

__all__ = ["AgentConfig", "ConfigError", "ConfigProblem", "FleetConfig", "load_fleet"]

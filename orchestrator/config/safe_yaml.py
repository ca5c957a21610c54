"""fleet.yaml is read with the bounded YAML reader the agent runtime uses for contracts too."""

from agent_runtime import YAML_MAX_DEPTH as MAX_DEPTH
from agent_runtime import YAML_MAX_FILE_BYTES as MAX_FILE_BYTES
from agent_runtime import YAML_MAX_NODES as MAX_NODES
from agent_runtime import (
    FieldPath,
    YamlDocument,
    YamlProblem,
    YamlRefused,
    load_yaml,
    load_yaml_file,
    read_text_file,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "FieldPath",
    "YamlDocument",
    "YamlProblem",
    "YamlRefused",
    "load_yaml",
    "load_yaml_file",
    "read_text_file",
]

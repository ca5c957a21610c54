"""fleet.yaml is read with the bounded YAML reader the agent runtime uses for contracts too."""

from agent_runtime.safety.safe_yaml import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
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

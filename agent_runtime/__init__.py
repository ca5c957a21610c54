"""The Flotilla agent runtime: everything that runs inside one agent's container.

`python -m agent_runtime` starts an agent: it fetches its configuration from the orchestrator,
checks in regularly, long-polls its inbox and works each item through the tool-calling loop
against the orchestrator's LLM gateway. The idle path imports only the standard library, pydantic,
websockets and the wire models; the model client, the memory store and the tools load on the
first item.

The public surface, for the orchestrator and anything else outside this package:

- this module: the names in `__all__` (workspace files, INTERFACE.md contracts, the bounded YAML
  reader, and the pieces that run an agent in-process);
- `agent_runtime.protocol`: the wire models;
- `agent_runtime.memory`: the memory store and its models (its own `__all__`);
- `agent_runtime.testing`: deterministic fakes (its own `__all__`).

Every other module is internal and may change without notice (docs/agent-runtime.md, "Public API").
"""

from __future__ import annotations

import importlib

# Not `typing.TYPE_CHECKING`: importing typing would cost the stdlib-only start-up a few ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from agent_runtime.backoff import DEFAULT_JITTER, Backoff, backoff_delay, nominal_delay
    from agent_runtime.context_settings import ContextSettings
    from agent_runtime.process.collector import collector_paused
    from agent_runtime.process.disk_space import is_disk_full
    from agent_runtime.process.settings import Settings
    from agent_runtime.safety.redaction import redact as redact_credentials
    from agent_runtime.safety.safe_yaml import MAX_DEPTH as YAML_MAX_DEPTH
    from agent_runtime.safety.safe_yaml import MAX_FILE_BYTES as YAML_MAX_FILE_BYTES
    from agent_runtime.safety.safe_yaml import MAX_NODES as YAML_MAX_NODES
    from agent_runtime.safety.safe_yaml import (
        FieldPath,
        YamlDocument,
        YamlProblem,
        YamlRefused,
        load_yaml,
        load_yaml_file,
        read_text_file,
    )
    from agent_runtime.sse import SseEvent, aiter_sse, iter_sse
    from agent_runtime.transport.channel import AgentChannel
    from agent_runtime.transport.serving import AgentService
    from agent_runtime.work.prompt import OUTPUT_SCHEMA_MARKER
    from agent_runtime.workspace.binary import PNG_MAGIC, SCREENSHOTS, BadBinaryName, VersionedBinaries
    from agent_runtime.workspace.contracts import ContractError, Interface, parse_interface, validate_payload
    from agent_runtime.workspace.versioned import (
        CAPS,
        READ_ONLY,
        WORKSPACE_FILES,
        Author,
        CapExceeded,
        FileVersion,
        InvalidContent,
        ReadOnlyFile,
        UnknownFile,
        UnknownVersion,
        Workspace,
        WorkspaceError,
        atomic_write_bytes,
        locked_versions,
        normalize_name,
        scaffold,
    )

# Public name -> (module, name there). Each is imported on first use: `python -m agent_runtime`
# runs this file before it reports in with the standard library alone, and an eager import here
# would load pydantic, YAML and the channel first.
_EXPORTS: dict[str, tuple[str, str]] = {
    "AgentChannel": ("agent_runtime.transport.channel", "AgentChannel"),
    "AgentService": ("agent_runtime.transport.serving", "AgentService"),
    "Author": ("agent_runtime.workspace.versioned", "Author"),
    "Backoff": ("agent_runtime.backoff", "Backoff"),
    "DEFAULT_JITTER": ("agent_runtime.backoff", "DEFAULT_JITTER"),
    "CAPS": ("agent_runtime.workspace.versioned", "CAPS"),
    "CapExceeded": ("agent_runtime.workspace.versioned", "CapExceeded"),
    "ContextSettings": ("agent_runtime.context_settings", "ContextSettings"),
    "ContractError": ("agent_runtime.workspace.contracts", "ContractError"),
    "FieldPath": ("agent_runtime.safety.safe_yaml", "FieldPath"),
    "FileVersion": ("agent_runtime.workspace.versioned", "FileVersion"),
    "Interface": ("agent_runtime.workspace.contracts", "Interface"),
    "InvalidContent": ("agent_runtime.workspace.versioned", "InvalidContent"),
    "OUTPUT_SCHEMA_MARKER": ("agent_runtime.work.prompt", "OUTPUT_SCHEMA_MARKER"),
    "READ_ONLY": ("agent_runtime.workspace.versioned", "READ_ONLY"),
    "ReadOnlyFile": ("agent_runtime.workspace.versioned", "ReadOnlyFile"),
    "Settings": ("agent_runtime.process.settings", "Settings"),
    "SseEvent": ("agent_runtime.sse", "SseEvent"),
    "UnknownFile": ("agent_runtime.workspace.versioned", "UnknownFile"),
    "UnknownVersion": ("agent_runtime.workspace.versioned", "UnknownVersion"),
    "WORKSPACE_FILES": ("agent_runtime.workspace.versioned", "WORKSPACE_FILES"),
    "Workspace": ("agent_runtime.workspace.versioned", "Workspace"),
    "WorkspaceError": ("agent_runtime.workspace.versioned", "WorkspaceError"),
    "YAML_MAX_DEPTH": ("agent_runtime.safety.safe_yaml", "MAX_DEPTH"),
    "YAML_MAX_FILE_BYTES": ("agent_runtime.safety.safe_yaml", "MAX_FILE_BYTES"),
    "YAML_MAX_NODES": ("agent_runtime.safety.safe_yaml", "MAX_NODES"),
    "YamlDocument": ("agent_runtime.safety.safe_yaml", "YamlDocument"),
    "YamlProblem": ("agent_runtime.safety.safe_yaml", "YamlProblem"),
    "YamlRefused": ("agent_runtime.safety.safe_yaml", "YamlRefused"),
    "aiter_sse": ("agent_runtime.sse", "aiter_sse"),
    "atomic_write_bytes": ("agent_runtime.workspace.versioned", "atomic_write_bytes"),
    "BadBinaryName": ("agent_runtime.workspace.binary", "BadBinaryName"),
    "PNG_MAGIC": ("agent_runtime.workspace.binary", "PNG_MAGIC"),
    "SCREENSHOTS": ("agent_runtime.workspace.binary", "SCREENSHOTS"),
    "VersionedBinaries": ("agent_runtime.workspace.binary", "VersionedBinaries"),
    "locked_versions": ("agent_runtime.workspace.versioned", "locked_versions"),
    "backoff_delay": ("agent_runtime.backoff", "backoff_delay"),
    "collector_paused": ("agent_runtime.process.collector", "collector_paused"),
    "is_disk_full": ("agent_runtime.process.disk_space", "is_disk_full"),
    "iter_sse": ("agent_runtime.sse", "iter_sse"),
    "load_yaml": ("agent_runtime.safety.safe_yaml", "load_yaml"),
    "load_yaml_file": ("agent_runtime.safety.safe_yaml", "load_yaml_file"),
    "nominal_delay": ("agent_runtime.backoff", "nominal_delay"),
    "normalize_name": ("agent_runtime.workspace.versioned", "normalize_name"),
    "parse_interface": ("agent_runtime.workspace.contracts", "parse_interface"),
    "read_text_file": ("agent_runtime.safety.safe_yaml", "read_text_file"),
    "redact_credentials": ("agent_runtime.safety.redaction", "redact"),
    "scaffold": ("agent_runtime.workspace.versioned", "scaffold"),
    "validate_payload": ("agent_runtime.workspace.contracts", "validate_payload"),
}

__all__ = [
    "CAPS",
    "DEFAULT_JITTER",
    "OUTPUT_SCHEMA_MARKER",
    "PNG_MAGIC",
    "READ_ONLY",
    "SCREENSHOTS",
    "WORKSPACE_FILES",
    "YAML_MAX_DEPTH",
    "YAML_MAX_FILE_BYTES",
    "YAML_MAX_NODES",
    "AgentChannel",
    "AgentService",
    "Author",
    "Backoff",
    "BadBinaryName",
    "CapExceeded",
    "ContextSettings",
    "ContractError",
    "FieldPath",
    "FileVersion",
    "Interface",
    "InvalidContent",
    "ReadOnlyFile",
    "Settings",
    "SseEvent",
    "UnknownFile",
    "UnknownVersion",
    "VersionedBinaries",
    "Workspace",
    "WorkspaceError",
    "YamlDocument",
    "YamlProblem",
    "YamlRefused",
    "aiter_sse",
    "atomic_write_bytes",
    "backoff_delay",
    "collector_paused",
    "is_disk_full",
    "iter_sse",
    "load_yaml",
    "load_yaml_file",
    "locked_versions",
    "nominal_delay",
    "normalize_name",
    "parse_interface",
    "read_text_file",
    "redact_credentials",
    "scaffold",
    "validate_payload",
]


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'agent_runtime' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

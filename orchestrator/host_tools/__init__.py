"""Tools the orchestrator runs on an agent's behalf: the agent sees them in its catalog, but
every call crosses the agent API and is checked, executed and recorded here, under the agent's
policy in fleet.yaml. One provider per family (HTTP MCP servers, HTTP requests, sandboxed code,
notifications); `HostToolCatalog` offers an agent the tools of every provider its config enables.

Must not import the HTTP layer (`orchestrator.api`); providers are given what they use.
"""

from orchestrator.host_tools.base import HostToolProvider, HostToolRefused
from orchestrator.host_tools.catalog import HostToolCatalog

__all__ = ["HostToolCatalog", "HostToolProvider", "HostToolRefused"]

"""The seam between the runtime and the memory store (`agent_runtime.memory`).

The runtime needs three things from it: a `FactStore` for flushed facts and compaction
episodes, the memory tools for the model, and the mode it runs in (hybrid or keyword) for
check-ins. Without a usable store the agent keeps working with MEMORY.md alone.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from agent_runtime.client import OrchestratorClient
from agent_runtime.facts import FactStore
from agent_runtime.protocol import AgentRuntimeConfig
from agent_runtime.settings import Settings
from agent_runtime.state import MemoryMode
from agent_runtime.tools.registry import Tool

log = logging.getLogger(__name__)


@dataclass
class MemoryBridge:
    store: FactStore | None = None
    tools: list[Tool] = field(default_factory=list)
    mode: MemoryMode = "unknown"

    @classmethod
    def open(cls, settings: Settings, config: AgentRuntimeConfig, client: OrchestratorClient) -> MemoryBridge:
        try:
            import agent_runtime.memory  # noqa: F401
        except ModuleNotFoundError as missing:
            if missing.name != "agent_runtime.memory":
                raise
            log.info("no memory store in this runtime: facts go to MEMORY.md only")
            return cls()
        return cls()

"""The operator's access to an agent's memory: asked of the agent over its link.

An agent's memory database is in its own storage, which the orchestrator never opens. Each
operator route becomes one request (`AgentOp.MEMORY_*`) that the agent serves with its own
store, through the same `MemoryStore` it uses itself, so precedence, barriers and
supersession apply to operator changes too. A fresh agent creates its store when first asked;
a sleeping one is woken; one that cannot answer gives a 503 naming the reason.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from agent_runtime.protocol import AgentOp
from orchestrator.running_agents.ask import AgentAsker

Model = TypeVar("Model", bound=BaseModel)


async def ask_memory(asker: AgentAsker, agent: str, op: AgentOp, model: type[Model], **body: Any) -> Model:
    """The agent's answer to a memory request, as `model`."""
    wanted = {key: value for key, value in body.items() if value is not None}
    return await asker.ask(agent, op, wanted, model)

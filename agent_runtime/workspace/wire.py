"""The workspace's wire models: a write (a `workspace_write` frame) and its answer, and an
operation of an INTERFACE.md contract as peers see it.

Apart from `agent_runtime.protocol` (which re-exports them) because the workspace's own code
returns them: checking fleet.yaml's seeds and contracts uses the workspace, and the `flotilla`
command does that before it starts the orchestrator, without loading every wire model.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agent_runtime.wire import WireModel


class WorkspaceWrite(WireModel):
    content: str
    author: Literal["agent", "operator", "job"] = "agent"
    reason: str = ""


class WorkspaceWriteResult(WireModel):
    name: str
    size: int
    version: int


class OperationSpec(WireModel):
    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})

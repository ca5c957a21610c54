"""The `exec` tool: an agent's command (or Python source) run in a throwaway sandbox by the
orchestrator, under the agent's `tools.exec` policy in fleet.yaml.

Owns the tool's arguments, its policy checks and approval, the staging of the workspace files a
call reads, the write-back of the files it produces (through `orchestrator.workspaces`, as the
agent) and what the agent and the operator are told. The sandbox itself is the runtime backend's
(`orchestrator.backends.sandbox`). Must not import the HTTP layer (`orchestrator.api`).
"""

from orchestrator.host_tools.sandbox.provider import (
    EXEC_RAN,
    EXEC_REFUSED,
    EXEC_TOOL,
    ExecContext,
    ExecRefused,
    ExecTool,
)

__all__ = ["EXEC_RAN", "EXEC_REFUSED", "EXEC_TOOL", "ExecContext", "ExecRefused", "ExecTool"]

"""A forgotten fact leaves the operator's copy of the agent's workspace: the kept versions of
each file are rewritten without the lines that state it (the live files are rewritten by the
agent, through the one write path)."""

from __future__ import annotations

from collections.abc import Sequence

from agent_runtime import Workspace
from agent_runtime.memory import forget_in_versions


def forget_in_workspace_versions(workspace: Workspace, texts: Sequence[str]) -> int:
    """Rewrite every kept version that states one of the texts; how many versions changed."""
    return forget_in_versions(workspace, texts)

"""A forgotten fact leaves what the orchestrator keeps of the agent, when the operator forgets
it: the kept versions of the workspace files in the operator's copy (the live files are
rewritten by the agent, through the one write path), and the agent's rows in state.db that
state it (inbox items and their results, run records, events), each asked of the table's owner.
Each sentence stating it becomes "(forgotten)"; JSON stays JSON."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol

from agent_runtime import Workspace
from agent_runtime.memory import forget_in_versions, scrub_forgotten

_WORD = re.compile(r"\w+")


class AgentTexts(Protocol):
    """An owner of state.db rows that quote what an agent was told or answered."""

    def rewrite_texts(self, agent: str, probe: str, rewrite: Callable[[str], str]) -> int: ...


def forget_in_workspace_versions(workspace: Workspace, texts: Sequence[str]) -> int:
    """Rewrite every kept version that states one of the texts; how many versions changed."""
    return forget_in_versions(workspace, texts)


def _probe(text: str) -> str | None:
    """The fact's rarest-looking word (a number first, else the longest) for a LIKE filter."""
    found: list[str] = _WORD.findall(text)
    if not found:
        return None
    return max(found, key=lambda word: (any(c.isdigit() for c in word), len(word)))


def forget_in_state(owners: Sequence[AgentTexts], agent: str, texts: Sequence[str]) -> int:
    """Scrub the agent's rows that state one of the texts, in each owner's tables; rows changed."""
    facts = [text for text in texts if text.strip()]
    probes = sorted({probe for probe in map(_probe, facts) if probe})

    def rewrite(text: str) -> str:
        return scrub_forgotten(text, facts)

    return sum(owner.rewrite_texts(agent, probe, rewrite) for owner in owners for probe in probes)

"""A forgotten fact leaves what the orchestrator keeps of the agent: the kept versions of the
workspace files in the operator's copy (the live files are rewritten by the agent, through the
one write path), and the agent's rows in state.db that state it (inbox items and their results,
run records, events), each asked of the table's owner. Each sentence stating it becomes
"(forgotten)"; JSON stays JSON.

The operator's forget reaches every event of the agent. The model's own forget, which the agent
reports (it is not trusted), reaches only the events that carry its conversation
(`CONVERSATION_EVENTS`): the records of what the orchestrator saw it do (tool calls run on the
host, refusals, limits, lifecycle) stay as they were, so no agent can rewrite the record of
its own actions by "forgetting" them."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol

from agent_runtime import Workspace
from agent_runtime.memory import forget_in_versions, scrub_forgotten

_WORD = re.compile(r"\w+")


CONVERSATION_EVENTS = (
    "message.sent",
    "message.delivered",
    "message.failed",
    "message.dead_lettered",
    "run.finished",
    "heartbeat.run",
    "compaction.done",
    "agent.reported",
    "item.done",
)
"""Events whose data quotes the agent's conversation (what it was told, what it answered)."""


class AgentTexts(Protocol):
    """An owner of state.db rows that quote what an agent was told or answered."""

    def rewrite_texts(self, agent: str, probe: str, rewrite: Callable[[str], str]) -> int: ...


class EventTexts(Protocol):
    def rewrite_texts(
        self, agent: str, probe: str, rewrite: Callable[[str], str], types: Sequence[str] | None = None
    ) -> int: ...


class _ConversationEvents:
    """The events owner, kept to the events that quote the conversation."""

    def __init__(self, events: EventTexts) -> None:
        self._events = events

    def rewrite_texts(self, agent: str, probe: str, rewrite: Callable[[str], str]) -> int:
        return self._events.rewrite_texts(agent, probe, rewrite, CONVERSATION_EVENTS)


def state_owners(
    inbox: AgentTexts, runs: AgentTexts, events: EventTexts, *, asked_by_agent: bool
) -> tuple[AgentTexts, ...]:
    """The owners a forget rewrites: every event for the operator's, the conversation's for
    the agent's own."""
    return (inbox, runs, _ConversationEvents(events) if asked_by_agent else events)


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

"""The model calls behind flush and compaction: extract durable facts, summarize history.

Both render turns as a plain transcript, split it into chunks that fit comfortably in the
window, and parse the model's answer. The prompts carry the markers `FLUSH_FACTS` and
`SUMMARIZE`, which the built-in `test` model recognizes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Protocol

from agent_runtime.workspace.history import Turn

FLUSH_MARKER = "FLUSH_FACTS"
SUMMARIZE_MARKER = "SUMMARIZE"
MAX_TOOL_OUTPUT_CHARS = 2_000
CHARS_PER_TOKEN = 4

FLUSH_SYSTEM = f"""{FLUSH_MARKER}
You maintain the long-term memory of an agent. From the conversation below, extract the durable
facts worth keeping after the conversation is gone: decisions, preferences, names, numbers,
commitments, results of work, corrections. Skip chit-chat and anything only true for a moment.
Answer with one fact per line, each line starting with "- ", each fact understandable on its own.
Keep verbatim every line the conversation marks with "remember:" (without that marker).
If there is nothing worth keeping, answer exactly: NONE"""

SUMMARY_SYSTEM = f"""{SUMMARIZE_MARKER}
You compress the conversation history of an agent. Write a concise summary of the conversation
below, merged with the previous summary if one is given: what was asked, what was done and
decided, what is still open. Plain prose or short bullets; at most {{limit}} words."""


class CompletionFailed(RuntimeError):
    """The model call for a flush or a summary failed; the caller retries later."""


class Completer(Protocol):
    def complete(self, system: str, user: str) -> str:
        """One non-streaming chat completion; raises CompletionFailed."""


def render_turn(turn: Turn) -> str:
    if turn.role == "tool":
        output = turn.content
        if len(output) > MAX_TOOL_OUTPUT_CHARS:
            output = output[:MAX_TOOL_OUTPUT_CHARS] + " [...]"
        return f"tool {turn.name or ''} result: {output}"
    text = turn.content
    if turn.tool_calls:
        calls = ", ".join(
            f"{call.get('function', {}).get('name')}({call.get('function', {}).get('arguments')})"
            for call in turn.tool_calls
        )
        text = f"{text}\n(called {calls})" if text else f"(called {calls})"
    return f"{turn.role}: {text}"


def chunks(turns: Sequence[Turn], max_tokens: int) -> Iterator[tuple[list[Turn], str]]:
    """Consecutive groups of turns whose transcript stays under `max_tokens` (estimated)."""
    budget = max(max_tokens, 64) * CHARS_PER_TOKEN
    group: list[Turn] = []
    lines: list[str] = []
    size = 0
    for turn in turns:
        line = render_turn(turn)
        if len(line) > budget:
            line = line[: budget - 20] + " [... cut]"
        if group and size + len(line) > budget:
            yield group, "\n".join(lines)
            group, lines, size = [], [], 0
        group.append(turn)
        lines.append(line)
        size += len(line) + 1
    if group:
        yield group, "\n".join(lines)


_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.*\S)\s*$")


def _json_fact(line: str) -> str | None:
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        return None
    fact = data.get("fact") if isinstance(data, dict) else None
    return str(fact).strip() if fact else None


def _unmark(fact: str) -> str:
    for marker in ("remember:", "fact:"):
        if fact.lower().startswith(marker):
            return fact[len(marker) :].strip()
    return fact


def parse_facts(answer: str) -> list[str]:
    """Facts from the model's answer: bullet lines, JSON lines {"fact": ...} or {"facts": [...]}."""
    text = answer.strip()
    if not text or text.upper().rstrip(".") == "NONE":
        return []
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("facts"), list):
            return [str(fact).strip() for fact in data["facts"] if str(fact).strip()]
    facts = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("{"):
            fact = _json_fact(stripped)
        else:
            match = _BULLET.match(line)
            fact = match[1].strip() if match else None
        if fact:
            facts.append(_unmark(fact))
    return [fact for fact in facts if fact]


def extract_facts(completer: Completer, transcript: str) -> list[str]:
    return parse_facts(completer.complete(FLUSH_SYSTEM, transcript))


def summarize(completer: Completer, previous: str, transcript: str, limit_words: int) -> str:
    user = f"Previous summary:\n{previous or '(none)'}\n\nConversation:\n{transcript}"
    summary = completer.complete(SUMMARY_SYSTEM.format(limit=limit_words), user).strip()
    if not summary:
        raise CompletionFailed("the model returned an empty summary")
    return clip_words(summary, limit_words)


def clip_words(text: str, limit_words: int) -> str:
    words = text.split(" ")
    if len(words) <= limit_words:
        return text
    return " ".join(words[:limit_words]) + " [...]"

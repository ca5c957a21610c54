"""The deterministic script the built-in `test` model follows (documented in docs/test-model.md).

Given a chat request it decides one reply, either text or tool calls, by these rules, first
match wins:

1. `FLUSH_FACTS` in a system message or the last message: JSON lines `{"fact": ...}`, one per
   distinct `remember: ...` line found anywhere in the conversation.
2. `SUMMARIZE` in a system message or the last message: a summary that keeps every
   `remember:` and `fact:` line.
3. The last message is a tool result: a sentence summarising each trailing tool result.
4. The last message contains `call TOOL {json}` for a tool of the catalog: that tool call
   (several directives make parallel calls).
5. The catalog has `ask_agent` and the last message contains `ask PEER OPERATION {json}`:
   an `ask_agent` call with arguments `{"agent", "operation", "input"}`.
6. The last message asks for a JSON object matching an output schema (a typed request from a
   peer): an object built from that schema whose strings mention the request's input.
7. The last message mentions a heartbeat: a short status.
8. Otherwise an echo of the last message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from agent_runtime import OUTPUT_SCHEMA_MARKER
from orchestrator.gateway.models import ChatCompletionRequest, ChatMessage
from orchestrator.gateway.providers.schema_sample import sample

NAME = "[test model]"
FLUSH_MARKER = "FLUSH_FACTS"
SUMMARIZE_MARKER = "SUMMARIZE"
ASK_TOOL = "ask_agent"
ECHO_LIMIT = 200
TOOL_RESULT_LIMIT = 300

# A fact line: "remember: X", optionally after a list bullet and one "speaker:" label
# (transcripts render turns as "user: remember: X").
_REMEMBER = re.compile(r"^\s*(?:[-*]\s+)?(?:[\w.-]+:\s+)?remember:\s*(?P<fact>\S.*?)\s*$", re.IGNORECASE)
_FACT = re.compile(r"^\s*(?:[-*]\s+)?fact:\s*(?P<fact>\S.*?)\s*$", re.IGNORECASE)
_CALL = re.compile(r"\bcall\s+(?P<tool>[A-Za-z_][\w.-]*)")
_ASK = re.compile(r"\bask\s+(?P<peer>[a-z0-9][a-z0-9-]*)\s+(?P<operation>[A-Za-z_][\w.-]*)\s*(?=\{)")
_HEARTBEAT = re.compile(r"\bheartbeat\b", re.IGNORECASE)
_BULLET = re.compile(r"^\s*[-*]\s+\S", re.MULTILINE)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class PlannedCall:
    name: str
    arguments: str


@dataclass(frozen=True)
class ScriptedReply:
    text: str | None = None
    tool_calls: list[PlannedCall] = field(default_factory=list)


def reply_to(request: ChatCompletionRequest) -> ScriptedReply:
    messages = request.messages
    last = messages[-1]
    marked = " ".join(m.text for m in messages if m.role in ("system", "developer")) + " " + last.text
    if FLUSH_MARKER in marked:
        return ScriptedReply(text="\n".join(json.dumps({"fact": fact}) for fact in remembered(messages)))
    if SUMMARIZE_MARKER in marked:
        return ScriptedReply(text=summary(messages))
    if last.role == "tool":
        return ScriptedReply(text=tool_results_summary(messages))
    tools_allowed = request.tools and request.tool_choice != "none"
    if tools_allowed:
        calls, refused = tool_directives(last.text, request.tool_names)
        if calls:
            return ScriptedReply(tool_calls=calls)
        if refused:
            available = ", ".join(request.tool_names)
            return ScriptedReply(text=f"{NAME} cannot call {refused}: not in the tool catalog ({available})")
        if ASK_TOOL in request.tool_names and (asks := ask_directives(last.text)):
            return ScriptedReply(tool_calls=asks)
    if (answer := schema_answer(last.text)) is not None:
        return ScriptedReply(text=answer)
    if _HEARTBEAT.search(last.text):
        return ScriptedReply(text=heartbeat_status(last.text))
    return ScriptedReply(text=f"{NAME} received: {_clip(last.text, ECHO_LIMIT)}")


def remembered(messages: list[ChatMessage]) -> list[str]:
    """Every distinct `remember:` fact in the conversation, in order of first appearance."""
    facts: dict[str, None] = {}
    for message in messages:
        for line in message.text.splitlines():
            if match := _REMEMBER.match(line):
                facts.setdefault(match.group("fact"), None)
    return list(facts)


def summary(messages: list[ChatMessage]) -> str:
    kept: dict[str, None] = {}
    for message in messages:
        for line in message.text.splitlines():
            if match := _REMEMBER.match(line):
                kept.setdefault(f"remember: {match.group('fact')}", None)
            elif match := _FACT.match(line):
                kept.setdefault(f"fact: {match.group('fact')}", None)
    turns = [m for m in messages if m.role not in ("system", "developer")]
    counts = {role: sum(1 for m in turns if m.role == role) for role in ("user", "assistant", "tool")}
    head = (
        f"{NAME} summary of {len(turns)} messages "
        f"({counts['user']} user, {counts['assistant']} assistant, {counts['tool']} tool)."
    )
    return "\n".join([head, *kept])


def tool_results_summary(messages: list[ChatMessage]) -> str:
    names = {
        call.id: call.function.name
        for m in messages
        if m.role == "assistant"
        for call in (m.tool_calls or [])
    }
    trailing: list[ChatMessage] = []
    for message in reversed(messages):
        if message.role != "tool":
            break
        trailing.insert(0, message)
    parts = [
        f"{names.get(m.tool_call_id or '', m.name or 'tool')} returned: {_clip(m.text, TOOL_RESULT_LIMIT)}"
        for m in trailing
    ]
    return f"{NAME} " + "; ".join(parts)


def tool_directives(text: str, catalog: list[str]) -> tuple[list[PlannedCall], str | None]:
    """`call TOOL {json}` directives: the calls to make, and the first unknown tool named with JSON."""
    calls: list[PlannedCall] = []
    refused: str | None = None
    for match in _CALL.finditer(text):
        tool = match.group("tool")
        arguments = _json_object_at(text, match.end())
        if tool in catalog:
            calls.append(PlannedCall(tool, json.dumps(arguments if arguments is not None else {})))
        elif arguments is not None and refused is None:
            refused = tool
    return calls, refused


def ask_directives(text: str) -> list[PlannedCall]:
    calls = []
    for match in _ASK.finditer(text):
        payload = _json_object_at(text, match.end())
        if payload is not None:
            arguments = {
                "agent": match.group("peer"),
                "operation": match.group("operation"),
                "input": payload,
            }
            calls.append(PlannedCall(ASK_TOOL, json.dumps(arguments)))
    return calls


def schema_answer(text: str) -> str | None:
    """A JSON object for a typed peer request, built from the schema the request carries."""
    at = text.find(OUTPUT_SCHEMA_MARKER)
    if at < 0:
        return None
    schema = _json_object_at(text, text.find("{", at))
    if schema is None:
        return None
    request = _json_object_at(text, text.find("{")) or {}
    hint = " ".join(str(v) for v in request.values() if isinstance(v, str | int | float)) or "answer"
    return json.dumps(sample(schema, hint))


def heartbeat_status(text: str) -> str:
    reasons = len(_BULLET.findall(text))
    if reasons == 0:
        return f"{NAME} heartbeat: all quiet, nothing needs doing."
    return f"{NAME} heartbeat: checked {reasons} item(s), status ok."


def _json_object_at(text: str, position: int) -> dict[str, object] | None:
    """The JSON object starting at the first non-space character from `position`, if any."""
    rest = text[position:].lstrip()
    if not rest.startswith("{"):
        return None
    try:
        value, _ = _DECODER.raw_decode(rest)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"

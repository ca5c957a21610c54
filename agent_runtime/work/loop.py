"""The tool-calling loop: model call, tool calls, results, until the model answers in text.

Limits (from `AgentRuntimeConfig.limits`):
- `max_iterations`: model calls per item; the last one is made without tools, so the model
  has to answer.
- `max_tool_rounds`: replies with tool calls that get executed; past it, calls come back
  "not run" and the model is asked to answer.
- `max_repeated_tool_calls`: the N-th call with the same name and the same arguments within
  one item is not run; the model is told why and asked to answer, and the caller's result
  says the loop was stopped.

Every message goes through the context manager, which logs it to the append-only history and
decides, before each call, whether to flush, compact, warn or prune.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agent_runtime.protocol import IDEMPOTENCY_HEADER, RUN_HEADER, LoopLimits, RunOutcome, ToolCallRecord
from agent_runtime.tools.registry import ToolOutcome, ToolRegistry
from agent_runtime.work.chat import ChatClient, ChatError, StreamBroken, new_call_key
from agent_runtime.work.condense import CompletionFailed
from agent_runtime.work.context import ContextManager
from agent_runtime.work.prompt import StaticBlocks
from agent_runtime.workspace.history import Turn

DeltaSink = Callable[[str], None]
log = logging.getLogger("agent_runtime")
# A model call cut mid-stream (the orchestrator restarted) is made again this many times.
CALL_RETRIES = 2


class RunTag:
    """The run the model calls being made belong to (sent to the gateway as a header)."""

    def __init__(self) -> None:
        self.run_id: str | None = None

    def headers(self) -> dict[str, str]:
        return {RUN_HEADER: self.run_id} if self.run_id else {}


class LoopFailed(RuntimeError):
    """The model could not be reached or refused the request (budget, model not allowed...)."""


@dataclass
class LoopResult:
    text: str
    outcome: RunOutcome
    detail: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    iterations: int = 0
    tool_rounds: int = 0
    tools_used: list[str] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)


@dataclass
class ModelReply:
    content: str
    tool_calls: list[dict[str, Any]]
    tokens_in: int
    tokens_out: int


def call_key(name: str, arguments: str) -> tuple[str, str]:
    """Identical calls compare equal whatever the key order or spacing of their JSON."""
    try:
        canonical = json.dumps(json.loads(arguments or "{}"), sort_keys=True, separators=(",", ":"))
    except json.JSONDecodeError:
        canonical = arguments.strip()
    return name, canonical


def call_record(outcome: ToolOutcome) -> ToolCallRecord:
    """What the run record keeps of one call: no arguments or output (they may be large or private)."""
    verdict = outcome.verdict
    return ToolCallRecord(
        name=outcome.name,
        ok=outcome.ok,
        source=outcome.source,
        approval=verdict.state if verdict else None,
        approval_id=verdict.approval_id if verdict else None,
        duration_s=round(outcome.duration_s, 3),
        detail="" if outcome.ok else outcome.output[:300],
    )


class ToolLoop:
    def __init__(
        self,
        client: ChatClient,
        registry: ToolRegistry,
        context: ContextManager,
        static_blocks: Callable[[], StaticBlocks],
        limits: LoopLimits,
        tag: RunTag | None = None,
    ) -> None:
        self.client = client
        self.registry = registry
        self.context = context
        self.static_blocks = static_blocks
        self.limits = limits
        self.tag = tag or RunTag()

    def run(self, item_id: str, message: str, model: str, on_delta: DeltaSink) -> LoopResult:
        """Work one item; the message (with its header) is the item's first turn."""
        self.context.begin_item()
        self.context.add(Turn(role="user", content=message, item_id=item_id))
        try:
            return self._iterate(item_id, model, on_delta)
        finally:
            self.context.end_item()

    def _iterate(self, item_id: str, model: str, on_delta: DeltaSink) -> LoopResult:
        result = LoopResult(text="", outcome=RunOutcome.OK)
        seen: Counter[tuple[str, str]] = Counter()
        stop_reason = ""
        max_iterations = max(self.limits.max_iterations, 1)
        for iteration in range(1, max_iterations + 1):
            if iteration == max_iterations > 1 and not stop_reason:
                # Still calling tools with one call left: this one must answer without them.
                stop_reason = f"iteration limit reached ({max_iterations} model calls)"
            last_chance = bool(stop_reason) or iteration == max_iterations
            prepared = self.context.prepare(self.static_blocks())
            tools = None if last_chance or not len(self.registry) else self.registry.specs()
            reply = self._call(model, prepared.messages, tools, on_delta)
            result.iterations = iteration
            result.tokens_in += reply.tokens_in
            result.tokens_out += reply.tokens_out
            self.context.add(
                Turn(
                    role="assistant",
                    content=reply.content,
                    tool_calls=tuple(reply.tool_calls),
                    item_id=item_id,
                )
            )
            if not reply.tool_calls:
                return self._finish(result, reply.content, stop_reason)
            if last_chance:
                stop_reason = stop_reason or f"iteration limit reached ({max_iterations} model calls)"
                self._refuse_calls(item_id, reply.tool_calls, stop_reason)
                return self._finish(result, reply.content, stop_reason)
            result.tool_rounds += 1
            if result.tool_rounds > self.limits.max_tool_rounds:
                stop_reason = f"tool round limit reached ({self.limits.max_tool_rounds} rounds of tool calls)"
                self._refuse_calls(item_id, reply.tool_calls, stop_reason)
                continue
            stop_reason = self._run_calls(item_id, reply.tool_calls, seen, result)
        raise AssertionError("unreachable: the last iteration always returns")

    def _run_calls(
        self, item_id: str, calls: list[dict[str, Any]], seen: Counter[tuple[str, str]], result: LoopResult
    ) -> str:
        stop_reason = ""
        for call in calls:
            name = call["function"]["name"]
            arguments = call["function"]["arguments"]
            key = call_key(name, arguments)
            seen[key] += 1
            if seen[key] >= self.limits.max_repeated_tool_calls:
                stop_reason = f"repeated identical tool call: {name} was called {seen[key]} times with the same arguments"
                output = f"STOPPED: {stop_reason}. It will not run again. Answer now with what you have."
            else:
                outcome = self.registry.dispatch(name, arguments)
                output = outcome.output
                result.tools_used.append(name)
                result.tool_calls.append(call_record(outcome))
            self.context.add(
                Turn(role="tool", content=output, tool_call_id=call["id"], name=name, item_id=item_id)
            )
        return stop_reason

    def _refuse_calls(self, item_id: str, calls: list[dict[str, Any]], reason: str) -> None:
        # Every tool call needs a result in the history, or the next request would be refused.
        for call in calls:
            self.context.add(
                Turn(
                    role="tool",
                    content=f"NOT RUN: {reason}. Answer now with what you have.",
                    tool_call_id=call["id"],
                    name=call["function"]["name"],
                    item_id=item_id,
                )
            )

    @staticmethod
    def _finish(result: LoopResult, text: str, stop_reason: str) -> LoopResult:
        result.text = text
        if stop_reason:
            result.outcome = RunOutcome.LIMIT
            result.detail = f"stopped: {stop_reason}"
            result.text = f"{text}\n\n[{result.detail}]" if text else f"[{result.detail}]"
        return result

    def _call(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        on_delta: DeltaSink,
    ) -> ModelReply:
        # The same key on every try: a call the gateway settled before the stream broke is
        # answered again from its record, not charged twice.
        headers = {**self.tag.headers(), IDEMPOTENCY_HEADER: new_call_key()}
        for attempt in range(CALL_RETRIES + 1):
            try:
                return _collect(self.client.stream(model, messages, tools, headers), on_delta)
            except StreamBroken as broken:
                # Cut by an orchestrator restart: made again, a bounded number of times.
                if attempt == CALL_RETRIES:
                    raise LoopFailed(f"model call failed: {broken}") from None
                log.warning("model call cut (%s); calling again", broken)
            except ChatError as failed:
                raise LoopFailed(f"model call failed: {failed}") from None
        raise AssertionError("unreachable: the last attempt returns or raises")


def _collect(stream: Iterator[dict[str, Any]], on_delta: DeltaSink) -> ModelReply:
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    tokens_in = tokens_out = 0
    for chunk in stream:
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            tokens_in = int(usage.get("prompt_tokens") or 0)
            tokens_out = int(usage.get("completion_tokens") or 0)
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if text:
                content.append(text)
                on_delta(text)
            for part in delta.get("tool_calls") or []:
                call = calls.setdefault(
                    int(part.get("index") or 0),
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                if part.get("id"):
                    call["id"] = part["id"]
                function = part.get("function")
                if isinstance(function, dict):
                    call["function"]["name"] += function.get("name") or ""
                    call["function"]["arguments"] += function.get("arguments") or ""
    ordered = [calls[index] for index in sorted(calls)]
    for number, call in enumerate(ordered):
        call["id"] = call["id"] or f"call_{number}"
    return ModelReply("".join(content), ordered, tokens_in, tokens_out)


class OpenAICompleter:
    """Single non-streaming completions, for flushes and summaries."""

    def __init__(self, client: ChatClient, model: Callable[[], str], tag: RunTag | None = None) -> None:
        self.client = client
        self.model = model
        self.tag = tag or RunTag()

    def complete(self, system: str, user: str) -> str:
        """A flush or a summary, made for (and charged to) the run under way."""
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        return self._create(messages, self.tag.headers())

    def ask(self, prompt: str) -> str:
        """One prompt, one answer (the memory maintenance jobs' model call, part of no run)."""
        return self._create([{"role": "user", "content": prompt}], {})

    def _create(self, messages: list[dict[str, Any]], headers: dict[str, str]) -> str:
        try:
            response = self.client.create(self.model(), messages, headers)
        except ChatError as failed:
            raise CompletionFailed(str(failed)) from None
        choices = response.get("choices")
        if not isinstance(choices, list) or not choices:
            raise CompletionFailed("the model returned no choice")
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        return content if isinstance(content, str) else ""

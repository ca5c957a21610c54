"""The context manager: keeps every request inside the model's window without losing facts.

Before each model call it measures the request about to be sent (the incoming message and the
tool outputs of this item included) and acts on the share of the window it would fill:

    flush   (60%)  the model extracts durable facts -> MEMORY.md and the memory store
    compact (70%)  flush first, then summarize, then keep the summary + the last 4 messages
    warn    (80%)  a short warning goes into the request
    prune   (90%)  drop the oldest turns, then shorten what is left, down to 80%

Nothing here deletes the turn log on disk. A turn leaves the context only after a successful
flush, or by hard pruning, in which case its id waits in a backlog that the next successful
flush covers: a failed flush delays facts, it never drops them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent_runtime.process.disk_space import is_disk_full
from agent_runtime.protocol import ContextStatus, ContextThresholds
from agent_runtime.work.condense import (
    CHARS_PER_TOKEN,
    Completer,
    CompletionFailed,
    chunks,
    extract_facts,
    summarize,
)
from agent_runtime.work.facts import FactStore, FactStoreError, MemoryFileFacts, MemoryFileFull
from agent_runtime.work.prompt import StaticBlocks, assemble, summary_message
from agent_runtime.work.tokens import TOKENS_PER_MESSAGE, TOKENS_REPLY_PRIMING, TokenCounter
from agent_runtime.workspace.history import HistoryLog, Turn
from agent_runtime.workspace.versioned import atomic_write_bytes

log = logging.getLogger(__name__)

KEEP_LAST = 4
SUMMARY_SHARE = 0.10
CHUNK_SHARE = 0.40
EventSink = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class PreparedRequest:
    messages: list[dict[str, Any]]
    tokens: int
    share: float
    warned: bool
    pruned: int


def _valid_start(turns: Sequence[Turn], index: int) -> int:
    """Move `index` back so the kept turns do not open with tool results missing their call."""
    while 0 < index < len(turns) and turns[index].role == "tool":
        index -= 1
    return index


class ContextManager:
    def __init__(
        self,
        *,
        window: int,
        thresholds: ContextThresholds,
        counter: TokenCounter,
        completer: Completer,
        memory_file: MemoryFileFacts | None,
        store: FactStore | None,
        history_log: HistoryLog,
        state_path: Path,
        tools_text: str = "",
        emit: EventSink | None = None,
    ) -> None:
        self.window = window
        self.thresholds = thresholds
        self.counter = counter
        self.completer = completer
        self.memory_file = memory_file
        self.store = store
        self.history_log = history_log
        self.state_path = state_path
        self.emit: EventSink = emit or (lambda _type, _data: None)
        self.summary = ""
        self.history: list[Turn] = []
        self.current: list[Turn] = []
        self.flushed: set[str] = set()
        self.backlog: list[str] = []
        self.flushes = 0
        self.compactions = 0
        self.flush_failures = 0
        self.last_tokens = 0
        self._cycle_flushed = False
        self._warned = False
        self._turn_tokens: dict[tuple[str, int, int], int] = {}
        self._tools_tokens = counter.count([tools_text])[0] if tools_text else 0

    # Turns

    def begin_item(self) -> None:
        self.end_item()

    def add(self, turn: Turn) -> None:
        """Log the turn on disk (append-only) and put it in the current item's context, with any
        credential in it redacted first: neither the model nor any file sees it afterwards."""
        self.current.append(self.history_log.append(turn))

    def end_item(self) -> None:
        self.history.extend(self.current)
        self.current = []
        self.save()

    # Measuring

    def _tokens_of(self, turns: Sequence[Turn]) -> list[int]:
        keys = [(turn.id, len(turn.content), len(turn.tool_calls)) for turn in turns]
        missing = [(key, turn) for key, turn in zip(keys, turns, strict=True) if key not in self._turn_tokens]
        if missing:
            counts = self.counter.count(
                [f"{turn.role}\n{turn.text_for_counting()}" for _key, turn in missing]
            )
            for (key, _turn), count in zip(missing, counts, strict=True):
                self._turn_tokens[key] = count + TOKENS_PER_MESSAGE
        return [self._turn_tokens[key] for key in keys]

    def _text_tokens(self, texts: Sequence[str]) -> int:
        present = [text for text in texts if text]
        return sum(self.counter.count(present)) + TOKENS_PER_MESSAGE * len(present) if present else 0

    def measure(self, static: StaticBlocks, warning: str = "") -> int:
        summary_text = summary_message(self.summary)["content"] if self.summary else ""
        fixed = self._text_tokens([static.identity, static.memory, summary_text, warning])
        turns = sum(self._tokens_of(self.history)) + sum(self._tokens_of(self.current))
        return TOKENS_REPLY_PRIMING + self._tools_tokens + fixed + turns

    def status(self) -> ContextStatus:
        return ContextStatus(
            window=self.window,
            used_tokens=self.last_tokens,
            tokenizer=self.counter.tokenizer,
            compactions=self.compactions,
            flushes=self.flushes,
        )

    # The decision, made on the request about to be sent

    def prepare(self, static: StaticBlocks) -> PreparedRequest:
        size = self.measure(static)
        if size >= self.thresholds.flush * self.window and not self._cycle_flushed:
            self._cycle_flushed = self.flush()
        if size >= self.thresholds.compact * self.window and self.compact(size):
            size = self.measure(static)
        return self.bounded_request(static, size, self.summary)

    def bounded_request(self, static: StaticBlocks, size: int, summary: str) -> PreparedRequest:
        """The request once the strategy has made room: pruned hard past the prune threshold, with
        a warning to the model past the warning threshold."""
        pruned = 0
        if size >= self.thresholds.prune * self.window:
            static, pruned = self.hard_prune(static)
            size = self.measure(static)
        warning = ""
        if size >= self.thresholds.warn * self.window:
            warning = self._warning(size)
            size = self.measure(static, warning)
        self.last_tokens = size
        messages = assemble(static, summary, self.history, self.current, warning)
        return PreparedRequest(messages, size, size / self.window, bool(warning), pruned)

    def _warning(self, size: int) -> str:
        share = round(100 * size / self.window)
        if not self._warned:
            self._warned = True
            self.emit("context.warning", {"share": share, "tokens": size, "window": self.window})
        return (
            f"[context {share}% full] Older turns will be dropped soon. Save anything that matters "
            "to MEMORY.md with update_workspace now, and keep answers and tool outputs short."
        )

    # Flush

    def _unflushed(self) -> list[Turn]:
        pending = self.history_log.load(self.backlog) if self.backlog else []
        pending += [turn for turn in self.history + self.current if turn.id not in self.flushed]
        return pending

    def flush(self) -> bool:
        """Extract facts from every turn not flushed yet. False when any part failed."""
        pending = self._unflushed()
        if not pending:
            return True
        max_tokens = max(int(self.window * CHUNK_SHARE), 256)
        for group, transcript in chunks(pending, max_tokens):
            try:
                facts = extract_facts(self.completer, transcript)
                self._keep(facts, [turn.id for turn in group])
            except (CompletionFailed, MemoryFileFull, FactStoreError) as failed:
                self.flush_failures += 1
                log.warning("flush failed, will retry on the next request: %s", failed)
                self.emit("context.flushed", {"ok": False, "error": str(failed)})
                return False
            done = {turn.id for turn in group}
            self.flushed |= done
            self.backlog = [turn_id for turn_id in self.backlog if turn_id not in done]
        self.flushes += 1
        self.emit("context.flushed", {"ok": True, "turns": len(pending)})
        self.save()
        return True

    def _keep(self, facts: list[str], turn_ids: list[str]) -> None:
        """Facts must land in MEMORY.md or in the store; raises MemoryFileFull when in neither.

        Without a memory file (a person's own conversation: MEMORY.md is in every prompt) they go
        to the store alone, and a refusal raises FactStoreError so the flush is retried."""
        if not facts:
            return
        if self.memory_file is None:
            if self.store is not None:
                self.store.save_facts(facts, turn_ids)
            return
        stored = False
        if self.store is not None:
            try:
                self.store.save_facts(facts, turn_ids)
                stored = True
            except FactStoreError as failed:
                log.warning("memory store refused %d fact(s): %s", len(facts), failed)
        try:
            self.memory_file.add(facts, self.store if stored else None)
        except MemoryFileFull:
            if not stored:
                raise

    # Compaction

    def compact(self, size: int = 0) -> bool:
        """Flush, summarize, then keep the summary and the last messages. False when not done.

        `size` is the request size that called for it (reported in the event)."""
        everything = self.history + self.current
        pinned = self.current[:1]
        start = _valid_start(everything, max(len(everything) - KEEP_LAST, 0))
        dropped = [turn for turn in everything[:start] if turn not in pinned]
        if not dropped:
            return False
        if not self.flush():
            return False
        words = max(int(self.window * SUMMARY_SHARE * CHARS_PER_TOKEN / 6), 50)
        summary = self.summary
        try:
            for _group, transcript in chunks(dropped, max(int(self.window * CHUNK_SHARE), 256)):
                summary = summarize(self.completer, summary, transcript, words)
        except CompletionFailed as failed:
            log.warning("compaction failed, history kept: %s", failed)
            return False
        before = size or self.last_tokens
        self._store_episode(dropped, summary)
        kept = {turn.id for turn in pinned} | {turn.id for turn in everything[start:]}
        self.summary = summary
        self.history = [turn for turn in self.history if turn.id in kept]
        self.current = [turn for turn in self.current if turn.id in kept]
        self.flushed &= kept
        self.compactions += 1
        self._cycle_flushed = False
        self._warned = False
        self.save()
        self.emit(
            "compaction.done",
            {"dropped": len(dropped), "kept": len(kept), "tokens_before": before, "window": self.window},
        )
        return True

    def _store_episode(self, dropped: list[Turn], summary: str) -> None:
        if self.store is None:
            return
        try:
            self.store.add_episode(dropped[0].at, dropped[-1].at, [turn.id for turn in dropped], summary)
        except FactStoreError as failed:
            log.warning("episode not stored (the summary stays in context): %s", failed)

    # Hard pruning: the last resort that keeps every request inside the window

    def hard_prune(self, static: StaticBlocks) -> tuple[StaticBlocks, int]:
        target = int(self.thresholds.warn * self.window)
        dropped = self._drop_oldest(static, target)
        static = self._shorten(static, target)
        self.save()
        self.emit("context.pruned", {"dropped": len(dropped), "window": self.window})
        return static, len(dropped)

    def _protected(self) -> set[str]:
        """The current message and the newest exchange (a call with its results) always stay."""
        everything = self.history + self.current
        keep = {turn.id for turn in self.current[:1]}
        if everything:
            keep |= {turn.id for turn in everything[_valid_start(everything, len(everything) - 1) :]}
        return keep

    def _drop_oldest(self, static: StaticBlocks, target: int) -> list[Turn]:
        dropped: list[Turn] = []
        protected = self._protected()
        size = self.measure(static)
        while size > target:
            victim = next((turn for turn in self.history + self.current if turn.id not in protected), None)
            if victim is None:
                break
            # Tool results whose call is gone would be refused by the API: they go with it.
            for turn in [victim, *self._results_of(victim)]:
                self._remove(turn)
                dropped.append(turn)
                size -= self._tokens_of([turn])[0]
        for turn in dropped:
            if turn.id not in self.flushed:
                self.backlog.append(turn.id)
            self.flushed.discard(turn.id)
        return dropped

    def _results_of(self, turn: Turn) -> list[Turn]:
        call_ids = {call.get("id") for call in turn.tool_calls}
        if not call_ids:
            return []
        return [
            other
            for other in self.history + self.current
            if other.role == "tool" and other.tool_call_id in call_ids
        ]

    def _remove(self, turn: Turn) -> None:
        for turns in (self.history, self.current):
            for index, candidate in enumerate(turns):
                if candidate.id == turn.id:
                    del turns[index]
                    return

    def _shorten(self, static: StaticBlocks, target: int) -> StaticBlocks:
        """Cut the longest text left (a tool output, the message, the summary, memory) until under target."""
        for _ in range(64):
            excess = self.measure(static) - target
            if excess <= 0:
                break
            texts: list[tuple[int, str]] = [(len(self.summary), "summary"), (len(static.memory), "memory")]
            texts.append((len(static.identity), "identity"))
            texts += [(len(turn.content), f"turn:{turn.id}") for turn in self.history + self.current]
            longest, which = max(texts)
            if longest <= 200:
                break
            keep = longest - (excess + 64) * CHARS_PER_TOKEN
            if which == "summary":
                self.summary = _cut(self.summary, keep)
            elif which == "memory":
                static = replace(static, memory=_cut(static.memory, keep))
            elif which == "identity":
                static = replace(static, identity=_cut(static.identity, keep))
            else:
                self._shorten_turn(which.removeprefix("turn:"), keep)
        return static

    def _shorten_turn(self, turn_id: str, keep_chars: int) -> None:
        for turns in (self.history, self.current):
            for index, turn in enumerate(turns):
                if turn.id == turn_id:
                    turns[index] = replace(turn, content=_cut(turn.content, keep_chars))
                    return

    def rewrite_summary(self, rewrite: Callable[[str], str]) -> bool:
        """Apply `rewrite` to the summary of compacted history (a forgotten fact leaves it);
        True when it changed."""
        rewritten = rewrite(self.summary) if self.summary else self.summary
        if rewritten == self.summary:
            return False
        self.summary = rewritten
        self.save()
        return True

    def rewrite_texts(self, rewrite: Callable[[str], str]) -> bool:
        """Apply `rewrite` to the summary and to every turn held for the prompt, tool-call
        arguments included (a forgotten fact leaves them all); True when anything changed."""
        changed = self.rewrite_summary(rewrite)
        history = [_rewritten(turn, rewrite) for turn in self.history]
        current = [_rewritten(turn, rewrite) for turn in self.current]
        if history != self.history or current != self.current:
            self.history, self.current = history, current
            self.save()
            changed = True
        return changed

    # Persistence across restarts

    def save(self) -> None:
        state = {
            "summary": self.summary,
            "history": [turn.to_record() for turn in self.history],
            "flushed": sorted(self.flushed),
            "backlog": self.backlog,
            "flushes": self.flushes,
            "compactions": self.compactions,
        }
        data = json.dumps(state, ensure_ascii=False).encode("utf-8")
        try:
            atomic_write_bytes(self.state_path, data)
        except OSError as failed:
            # At a full disk the context lives on in memory; the saved one is only for a restart.
            if self.history_log.on_full is None or not is_disk_full(failed):
                raise
            self.history_log.on_full("the saved context", failed)

    def load(self) -> None:
        try:
            state = json.loads(self.state_path.read_text(encoding="utf-8"))
            history = [Turn.from_record(record) for record in state.get("history", [])]
        except FileNotFoundError:
            return
        except (json.JSONDecodeError, KeyError, TypeError) as bad:
            log.warning(
                "context state %s unreadable, starting fresh (history stays on disk): %s",
                self.state_path,
                bad,
            )
            return
        self.summary = str(state.get("summary", ""))
        self.history = history
        self.flushed = set(state.get("flushed", []))
        self.backlog = list(state.get("backlog", []))
        self.flushes = int(state.get("flushes", 0))
        self.compactions = int(state.get("compactions", 0))


def _cut(text: str, keep_chars: int) -> str:
    keep = max(keep_chars, 100)
    if len(text) <= keep:
        return text
    removed = len(text) - keep
    return text[:keep] + f"\n[... {removed} characters cut to fit the context window]"


def _rewritten(turn: Turn, rewrite: Callable[[str], str]) -> Turn:
    calls = tuple(
        {
            **call,
            "function": {
                **call["function"],
                "arguments": rewrite(str(call["function"].get("arguments", ""))),
            },
        }
        if isinstance(call.get("function"), dict)
        else call
        for call in turn.tool_calls
    )
    content = rewrite(turn.content)
    if content == turn.content and calls == turn.tool_calls:
        return turn
    return replace(turn, content=content, tool_calls=calls)

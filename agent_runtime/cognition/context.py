"""The `checkpoint` context strategy's context manager.

Nothing is summarized and nothing is flushed: every turn is in the transcript on disk
(`history/`), and the prompt replays only the turns after the consolidation job's checkpoint,
with WORKING_MEMORY.md (capped) in the memory system message. Both change together, when an
item begins and the latest consolidation covers `adopt_after_turns` of the replayed turns, so
the cached prefix breaks in steps, not after every consolidation, and every request of an item
shares its prefix with the one before. When the replay outgrows its bounds (`replay_turns`,
`replay_share` of the window), it first moves to the latest checkpoint; if that is not enough,
the oldest replayed turns leave the prompt in one step, down to half the bound; they stay in
the transcript and the next consolidation covers them. Hard pruning stays the last resort, as
in the `compact` strategy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from agent_runtime.cognition.files import SEMANTIC_FILES, CognitionFiles
from agent_runtime.memory.turns import Position, iter_turns, opens_exchange
from agent_runtime.protocol import ContextSettings
from agent_runtime.work.context import ContextManager, PreparedRequest
from agent_runtime.work.prompt import StaticBlocks
from agent_runtime.workspace.history import Turn

# After a restart, at most this many times `replay_turns` transcript turns are read back.
REPLAY_READ_FACTOR = 2
SEMANTIC_HINT = "Semantic memory, read on demand with read_file: " + ", ".join(
    f"cognition/{name}" for name in SEMANTIC_FILES
)


def _first_kept(turns: list[Turn], index: int) -> int:
    """Move `index` forward so the replay does not open with tool results missing their call."""
    while index < len(turns) and turns[index].role == "tool":
        index += 1
    return index


class CheckpointContext(ContextManager):
    def __init__(
        self,
        *,
        files: CognitionFiles,
        settings: ContextSettings,
        on_overflow: Callable[[], Any] | None = None,
        **base: Any,
    ) -> None:
        super().__init__(**base)
        self.files = files
        self.settings = settings
        self.on_overflow = on_overflow or (lambda: None)
        self.working_memory = ""
        self.checkpoint_turn: str | None = None
        self.replay_drops = 0
        self._adopted = False

    def begin_item(self) -> None:
        super().begin_item()
        self._apply_checkpoint()

    def _apply_checkpoint(self, force: bool = False) -> bool:
        """Move the replay to the consolidation's checkpoint and re-read WORKING_MEMORY.md, both
        as of now, when the checkpoint covers `adopt_after_turns` replayed turns (or `force`, or
        on the first item): the prompt changes from the memory block on, so this happens in
        steps rather than after every consolidation. True when the replay moved."""
        last = self.files.checkpoint("consolidation").get("last_turn_id")
        ids = [turn.id for turn in self.history]
        covered = ids.index(str(last)) + 1 if last and str(last) in ids else 0
        exchanges = sum(opens_exchange(turn.role, turn.content) for turn in self.history[:covered])
        first = not self._adopted
        if not (first or (covered and (force or exchanges >= self.settings.adopt_after_turns))):
            return False
        self._adopted = True
        self.checkpoint_turn = str(last) if last else None
        if covered:
            start = _first_kept(self.history, covered)
            self.history = self.history[start:]
            self.flushed &= {turn.id for turn in self.history}
        self.compactions += 1  # the prefix changes from the memory block on
        text = self.files.read(self.files.working_memory)
        cap = self.settings.working_memory_bytes
        clipped = text.encode("utf-8")[:cap].decode("utf-8", errors="ignore")
        if len(clipped) < len(text):
            clipped += "\n[NOTICE: WORKING_MEMORY.md was cut to its cap]"
        self.working_memory = clipped.strip()
        self.save()
        return covered > 0

    def load(self) -> None:
        """The saved state, then the replay rebuilt from the transcript after the consolidation
        checkpoint: what the prompt replays after a restart does not depend on the saved state
        (which may be older than the checkpoint, or gone)."""
        super().load()
        position = Position.from_json(self.files.checkpoint("consolidation").get("position"))
        after = [turn.id for turn, _ in iter_turns(self.files.history_dir, position)]
        after = after[-REPLAY_READ_FACTOR * self.settings.replay_turns :]
        replay = self.history_log.load(after) if after else []
        self.history = replay[_first_kept(replay, 0) :]
        self.flushed &= {turn.id for turn in self.history}

    def with_working_memory(self, static: StaticBlocks) -> StaticBlocks:
        block = self.working_memory or "(empty)"
        memory = f"{static.memory}\n\n## WORKING_MEMORY.md\n{block}\n\n{SEMANTIC_HINT}"
        return replace(static, memory=memory)

    def _bound_replay(self) -> int:
        """Drop the oldest replayed turns, in one step, when the replay is over its bounds."""
        max_turns = self.settings.replay_turns
        max_tokens = int(self.settings.replay_share * self.window)
        tokens = self._tokens_of(self.history)
        if len(self.history) <= max_turns and sum(tokens) <= max_tokens:
            return 0
        if self._apply_checkpoint(force=True):
            return self._bound_replay()
        keep_turns, keep_tokens = max_turns // 2, max_tokens // 2
        start = len(self.history)
        total = 0
        while (
            start > 0 and len(self.history) - start < keep_turns and total + tokens[start - 1] <= keep_tokens
        ):
            total += tokens[start - 1]
            start -= 1
        start = _first_kept(self.history, start)
        dropped = self.history[:start]
        self.history = self.history[start:]
        self.replay_drops += 1
        self.emit("context.replay_bounded", {"dropped": len(dropped), "kept": len(self.history)})
        self.on_overflow()
        return len(dropped)

    def prepare(self, static: StaticBlocks) -> PreparedRequest:
        static = self.with_working_memory(static)
        self._bound_replay()
        # No summary: the transcript is replayed from the consolidation checkpoint instead.
        return self.bounded_request(static, self.measure(static), "")

    def rewrite_summary(self, rewrite: Callable[[str], str]) -> bool:
        """A forgotten fact leaves the working memory held for the prompt too (the files are
        rewritten by `forgetting.forget_in_files`)."""
        changed = super().rewrite_summary(rewrite)
        rewritten = rewrite(self.working_memory) if self.working_memory else self.working_memory
        if rewritten != self.working_memory:
            self.working_memory = rewritten
            self.save()
            changed = True
        return changed

"""One conversation per paired person, apart from the agent's main one.

The operator, heartbeats, hooks and peers talk to the agent in its main conversation
(`.runtime/context.json`, turns in `history/`). Each paired person (an item whose principal is
`person:CHANNEL:USER`) has a context of their own: their recent turns, their compaction summary,
their flushes and thresholds, saved in `.runtime/contexts/<key>.json` with their turns in
`history/people/<key>/`, where `<key>` is derived from the principal by a hash, never the
person's own text. So nothing Ana said is in the prompt of Bruno's conversation, nor in the
main one, and the memory jobs that read `history/` (extraction into the shared scope,
consolidation) never see a person's turns. The shared parts of the prompt (identity files,
MEMORY.md, learnings, salient facts) are the same in every conversation.

At most `MAX_PERSON_CONTEXTS` person contexts are held in memory, the least recently used
leaving first; one that left is loaded from its file on the person's next message.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path

from agent_runtime.protocol import ContextThresholds, InboxItem, item_source
from agent_runtime.work.context import ContextManager
from agent_runtime.workspace.history import PEOPLE_FOLDER

MAX_PERSON_CONTEXTS = 16
CONTEXTS_FOLDER = "contexts"
PEOPLE_HISTORY = Path("history") / PEOPLE_FOLDER
MAIN = ""

ContextFactory = Callable[[str, Path, Path], ContextManager]
"""Builds a person's context from their scope, its state file and its turn-log folder."""


def conversation_scope(item: InboxItem) -> str:
    """The person whose conversation an item belongs to ('' for the main conversation)."""
    return item.principal if item_source(item.principal) == "person" else MAIN


def conversation_key(scope: str) -> str:
    """A file name for a person's conversation: a digest of the scope, never its text."""
    return "person-" + hashlib.sha256(scope.encode("utf-8")).hexdigest()[:32]


class Conversations:
    """The main context and the person contexts, by scope."""

    def __init__(
        self,
        main: ContextManager,
        new_person_context: ContextFactory,
        data_dir: Path,
        runtime_dir: Path,
        capacity: int = MAX_PERSON_CONTEXTS,
    ) -> None:
        self.main = main
        self._new = new_person_context
        self._data_dir = data_dir
        self._runtime_dir = runtime_dir
        self.capacity = max(capacity, 1)
        self._people: OrderedDict[str, ContextManager] = OrderedDict()

    def for_item(self, item: InboxItem) -> ContextManager:
        scope = conversation_scope(item)
        return self.main if scope == MAIN else self.person(scope)

    def person(self, scope: str) -> ContextManager:
        context = self._people.get(scope)
        if context is not None:
            self._people.move_to_end(scope)
            return context
        key = conversation_key(scope)
        context = self._new(
            scope,
            self._runtime_dir / CONTEXTS_FOLDER / f"{key}.json",
            self._data_dir / PEOPLE_HISTORY / key,
        )
        context.load()
        self._people[scope] = context
        while len(self._people) > self.capacity:
            # Each context is saved at the end of every item: dropping it loses nothing.
            self._people.popitem(last=False)
        return context

    def held(self) -> Iterator[ContextManager]:
        """The contexts in memory: the main one, then the people's."""
        yield self.main
        yield from self._people.values()

    def reconfigure(self, window: int, thresholds: ContextThresholds) -> None:
        for context in self.held():
            context.window = window
            context.thresholds = thresholds

    def rewrite_texts(self, rewrite: Callable[[str], str]) -> bool:
        """Rewrite every context held in memory (a forgotten fact leaves them all); the files of
        the others are rewritten with the rest of the agent's storage (`erasure.Eraser`)."""
        changed = False
        for context in self.held():
            changed = context.rewrite_texts(rewrite) or changed
        return changed

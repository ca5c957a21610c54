"""Provenance set by the runtime, not claimed by the model.

A fact's source says where its text came from, and the store's precedence rests on it: a
person's word (`user_stated`, `operator`) outranks the agent's note (`agent`), a job's
extraction (`extracted`) and a guess (`inferred`), and only a person's word lifts a forget
barrier. So the model cannot simply claim a source:

- the runtime hears what people said: the text of each operator message, as the orchestrator
  carried it (`PersonWords.heard`), kept for the last `KEEP_MESSAGES` messages;
- a `memory_save` from the model is stamped with the highest source its text supports: a
  person's (`user_stated`) when one of those messages states it (see `states`), else the
  agent's own (`agent`). The model may ask for a lower source (`inferred`), never a higher one;
- the model may forget a person's fact only when a person asked for it (`asked_to_forget`).

What the operator does through the memory API (source `operator`), what the extraction jobs
save (`extracted`) and what the store's own callers pass are not the model's claims: they are
stamped by the code that calls the store.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from dataclasses import dataclass

from agent_runtime.memory.models import PRECEDENCE, FactSource
from agent_runtime.memory.text import content_words

KEEP_MESSAGES = 32
MAX_MESSAGE_CHARS = 20_000
# A statement matches when it has all the fact's words that hold a digit, and at least this
# share of the others (so "The user's locker code is 4512" is stated by "my locker code is
# 4512", while "I like Lyon" does not state "The user's home city is Lyon").
STATED_SHARE = 1.0
MENTIONED_SHARE = 0.6
_FORGET_REQUEST = re.compile(
    r"\b(forget|delete|erase|remove|drop|wipe|purge|stop remembering|don'?t remember|do not remember)\b", re.I
)
# Words every fact about the user carries: they say nothing about which fact it is.
_FRAMING = frozenset({"user", "operator", "fact", "remember", "note", "save", "please"})


def distinctive_words(text: str) -> set[str]:
    return {word for word in content_words(text) if word not in _FRAMING}


MIN_ROOT = 4
MAX_SUFFIX = 3


def _same_root(word: str, other: str) -> bool:
    """Two forms of one word ("named" and "name", "preferred" and "prefers"): they share a
    prefix of at least four letters that leaves at most three letters of the longer one."""
    if word == other:
        return True
    shortest = min(len(word), len(other))
    if shortest < MIN_ROOT or any(ch.isdigit() for ch in word + other):
        return False
    common = 0
    while common < shortest and word[common] == other[common]:
        common += 1
    return common >= MIN_ROOT and max(len(word), len(other)) - common <= MAX_SUFFIX


def _found(word: str, said: set[str]) -> bool:
    return word in said or any(_same_root(word, other) for other in said)


def states(statement: str, fact: str, share: float = STATED_SHARE) -> bool:
    """True when `statement` says what `fact` says, in the same words.

    Every word of the fact holding a digit must be in the statement, and at least `share` of
    its other distinctive words (content words without stop words and "the user"; plural and
    verb "s" endings folded; another form of the same word counts, see `_same_root`). A fact
    with no distinctive word is stated by nothing.
    """
    wanted = distinctive_words(fact)
    if not wanted:
        return False
    said = set(content_words(statement))
    numbers = {word for word in wanted if any(ch.isdigit() for ch in word)}
    if not numbers <= said:
        return False
    others = wanted - numbers
    if not others:
        return True
    return sum(_found(word, said) for word in others) >= share * len(others)


def mentions(statement: str, fact: str, share: float = MENTIONED_SHARE) -> bool:
    """True when `statement` names most of the fact's distinctive words ("forget my alarm
    code" mentions "The user's alarm code is 7731")."""
    wanted = distinctive_words(fact)
    said = set(content_words(statement))
    return bool(wanted) and sum(_found(word, said) for word in wanted) >= share * len(wanted)


@dataclass(frozen=True)
class Stamp:
    source: FactSource
    note: str = ""


class PersonWords:
    """The recent messages people sent the agent (thread-safe; in memory only)."""

    def __init__(self, keep: int = KEEP_MESSAGES) -> None:
        self._messages: deque[tuple[str, str]] = deque(maxlen=keep)
        self._lock = threading.Lock()
        self.speaker = ""
        """Who the item being worked on came from: only their own words count as a person's."""

    def heard(self, text: str, who: str = "") -> None:
        """A person's message, as the orchestrator carried it (no header, no tool output)."""
        if text.strip():
            with self._lock:
                self._messages.append((who, text[:MAX_MESSAGE_CHARS]))

    def messages(self) -> list[str]:
        """The recent messages of the current speaker (what Ana said never supports a fact in
        Bruno's conversation)."""
        with self._lock:
            return [text for who, text in self._messages if who == self.speaker]

    def support(self, fact: str) -> str | None:
        """The most recent message of a person that states the fact, if any."""
        for message in reversed(self.messages()):
            if states(message, fact):
                return message
        return None

    def asked_to_forget(self, fact: str, fact_id: int) -> bool:
        """True when a recent message of a person asks to forget this fact: it asks to forget,
        and names the fact (`fact:12`) or shares most of its words."""
        for message in reversed(self.messages()):
            if not _FORGET_REQUEST.search(message):
                continue
            if f"fact:{fact_id}" in message.replace(" ", "") or mentions(message, fact):
                return True
        return False

    def stamp(self, text: str, claimed: FactSource | str) -> Stamp:
        """The source a model's `memory_save` gets: its claim, capped by what the text supports."""
        wanted = FactSource(claimed)
        ceiling = FactSource.USER_STATED if self.support(text) is not None else FactSource.AGENT
        if PRECEDENCE[wanted] <= PRECEDENCE[ceiling]:
            return Stamp(wanted)
        return Stamp(
            ceiling,
            f"recorded as {ceiling.value}, not {wanted.value}: no recent message of a person states it "
            "in these words",
        )

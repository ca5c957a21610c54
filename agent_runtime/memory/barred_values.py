"""The values a forgotten fact held, kept as keyed hashes, so that a restatement in any wording
is recognised: "The user's phone number is 555-0100" is barred as "Phone of the user:
555 0100", "call them on 5550100" or "+1 (555) 0100" too.

A fact's values are
- its numbers: each group of digits, and each run of groups written with spaces, dashes, dots,
  slashes or brackets between them, read as one number ("555-0100" -> "5550100");
- its codes ("INC-417", "#5521") and its names (capitalised words after the first word).
A text restates the values when it holds every number group of the fact (or each of its runs
as one number) and every code and name. Numbers of four digits or more, and codes, are specific
enough alone; shorter numbers and names also need one of the fact's other distinctive words.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, Field

from agent_runtime.memory.attributes import identifiers

_DIGIT_RUN = re.compile(r"\d+(?:[\s().\-/+]*\d+)*")
_DIGITS = re.compile(r"\d+")
_NAME = re.compile(r"\b[A-Z][\w'-]+", re.UNICODE)
SPECIFIC_DIGITS = 4

Hasher = Callable[[str], str]


class ValuePrint(BaseModel):
    """The hashed values of one forgotten fact (stored in the barrier's fingerprint)."""

    runs: list[str] = Field(default_factory=list, description="hashes of whole numbers")
    groups: list[str] = Field(default_factory=list, description="hashes of digit groups")
    names: list[str] = Field(default_factory=list, description="hashes of codes and names")
    specific: bool = False


@dataclass(frozen=True)
class Values:
    runs: frozenset[str]
    groups: frozenset[str]
    names: frozenset[str]

    @classmethod
    def of(cls, text: str) -> Values:
        runs = {re.sub(r"\D", "", run) for run in _DIGIT_RUN.findall(text)}
        groups = set(_DIGITS.findall(text))
        words = _NAME.findall(text)
        # The first word is capitalised as a sentence start: a name only as a possessive.
        if words and text.lstrip().startswith(words[0]) and not words[0].endswith("'s"):
            words = words[1:]
        names = {word.lower().removesuffix("'s") for word in words}
        names |= {code for code in identifiers(text) if " " not in code}
        return cls(frozenset(runs), frozenset(groups), frozenset(names))

    def hashed(self, hasher: Hasher) -> Values:
        return Values(
            frozenset(map(hasher, self.runs)),
            frozenset(map(hasher, self.groups)),
            frozenset(map(hasher, self.names)),
        )


def value_print(text: str, hasher: Hasher) -> ValuePrint:
    values = Values.of(text)
    specific = any(len(run) >= SPECIFIC_DIGITS for run in values.runs) or any(
        any(ch.isdigit() for ch in name) for name in values.names
    )
    hashed = values.hashed(hasher)
    return ValuePrint(
        runs=sorted(hashed.runs), groups=sorted(hashed.groups), names=sorted(hashed.names), specific=specific
    )


def restates(held: ValuePrint, said: Values, other_words_shared: bool) -> bool:
    """Whether a text whose hashed values are `said` restates the values of `held`."""
    if not (held.runs or held.names):
        return False
    numbers = set(held.groups) <= said.groups or set(held.runs) <= (said.runs | said.groups)
    if not numbers or not set(held.names) <= said.names:
        return False
    return held.specific or other_words_shared

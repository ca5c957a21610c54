"""Whether two close sentences state different values: the second half of the semantic
contradiction rule (`truth.disputed_by_meaning`), the first being their embeddings' similarity.

Three explainable tests, each naming what differs:
- numbers: both sentences carry numbers (times, dates, amounts, counts, number words up to
  twelve) and each has one the other lacks ("leaves at 7:15" / "departs at 9:40");
- negation: one sentence is negated and the other is not ("is allergic" / "is not allergic");
- names: both carry capitalised words (people, places, firms; days and months count as dates;
  the first word only as a possessive, "Anna's") and each has one the other lacks ("lives in
  Berlin" / "lives in Paris").
"Each has one the other lacks" keeps elaborations compatible: "7:15" / "7:15 from Terminal 2",
"Siemens" / "Siemens in Munich". Sentences that differ on two of these at once are taken as
about two subjects, not as disagreeing.

What it cannot see: a value that is an ordinary word ("vegan" / "vegetarian", "tea" /
"coffee"), and two sentences about different things that share their wording (the flight and
the train, both with a time): the similarity threshold is what keeps those apart.
"""

from __future__ import annotations

import re

_NUMBER = re.compile(r"\d+(?:[:.,/-]\d+)*")
_WORD = re.compile(r"[\w']+", re.UNICODE)
_NUMBER_WORDS = {
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
}
_NEGATIONS = frozenset(
    {"not", "never", "no", "none", "nothing", "nobody", "neither", "nor", "cannot", "without"}
)
_CALENDAR = frozenset(
    [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ]
)
# Clock times written "3pm" / "3 pm" are one value with their suffix.
_CLOCK_SUFFIX = re.compile(r"(\d)\s*(am|pm)\b", re.IGNORECASE)


def numbers(text: str) -> frozenset[str]:
    """Numbers, times and dates: digits, number words, and the names of days and months."""
    found = set(_NUMBER.findall(_CLOCK_SUFFIX.sub(r"\1\2", text)))
    found |= {m.group(0).lower().replace(" ", "") for m in _CLOCK_SUFFIX.finditer(text)}
    words = _words(text)
    found |= {_NUMBER_WORDS[w] for w in words if w in _NUMBER_WORDS}
    found |= {w for w in words if w in _CALENDAR}
    return frozenset(found)


def negated(text: str) -> bool:
    return any(w in _NEGATIONS or w.endswith("n't") for w in _words(text))


def names(text: str) -> frozenset[str]:
    """Capitalised words, except days and months (dates) and "I". The first word is capitalised
    as a sentence start, so it counts only as a possessive ("Anna's flight")."""
    words = _WORD.findall(text)
    if words and not words[0].endswith("'s"):
        words = words[1:]
    return frozenset(
        w.lower().removesuffix("'s")
        for w in words
        if w[:1].isupper() and w.lower() not in _CALENDAR and w != "I"
    )


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _each_lacks(first: frozenset[str], second: frozenset[str]) -> bool:
    return bool(first - second) and bool(second - first)


def disagreement(first: str, second: str) -> str | None:
    """What the two sentences disagree on ('numbers', 'negation', 'names'), or None: also None
    when they differ on more than one of these, which says two subjects ("Anna's flight is on
    Monday" / "Tom's train is on Friday") more often than one subject changed."""
    differences = [
        kind
        for kind, differs in (
            ("numbers", _each_lacks(numbers(first), numbers(second))),
            ("negation", negated(first) != negated(second)),
            ("names", _each_lacks(names(first), names(second))),
        )
        if differs
    ]
    return differences[0] if len(differences) == 1 else None

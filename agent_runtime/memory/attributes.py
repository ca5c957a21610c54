"""Whether two close sentences are two versions of one thing or facts about two things.

Similar wording is no evidence of one subject: "Invoice 1001 for Acme was paid on 3 March" and
"Invoice 1002 for Acme was paid on 5 March" are two invoices. Two tests, both on the words:

- `distinct_things`: the sentences name different identified things: an identifier that one
  holds and the other lacks (a code mixing letters and digits such as "INC-417" or "M12", a
  "#" number, a number right after a word that introduces one, "invoice 1001", "day 14"), the
  date of another event the sentence opens with ("On 3 March, ..." / "On 4 March, ..."), or a
  different person or thing named first ("Anna's flight" / "Omar's flight").
- `one_attribute_changed`: what differs is one stretch of words holding the value of one
  attribute of the same thing: "Ticket OPS-41 is assigned to Anna" / "... to Omar". Not when
  they are distinct things, when the words differ in several places, when the stretch is the
  subject (nothing but stop words before it, or a linking verb after it: "The budget of
  Apollo is ..." / "The budget of Cobalt is ..."), when the stretch is long (over four words,
  or over a third of the sentence: then it is another statement), or when a verb
  before it takes many values at once ("speaks German" / "speaks Italian": both can hold).
A negation added or dropped is the one difference of "is allergic" / "is not allergic".
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from itertools import pairwise

from agent_runtime.memory.text import NEGATIONS, STOP_WORDS

_TOKEN = re.compile(r"#?\w+(?:[-:./']\w+)*", re.UNICODE)
# Suffixes that make a number a value, not a code: times, ordinals, units.
_VALUE_SUFFIX = re.compile(r"^\d+(?:[.,:]\d+)*(?:am|pm|h|st|nd|rd|th|k|m|km|kg|g|mb|gb|tb|ms|s|x|%)?$")
# Words after which a number names a thing rather than states a value.
IDENTIFIER_NOUNS = frozenset(
    {
        "invoice", "ticket", "order", "issue", "incident", "case", "ref", "id", "no", "day",
        "room", "flight", "item", "meter", "account", "bug", "task", "step", "pr", "request",
        "batch", "shipment", "contract", "policy", "unit", "lot", "run", "build", "job", "note",
        "entry", "record", "row", "line", "page", "chapter", "table", "gate", "seat", "bus",
        "train", "route", "platform", "apartment", "flat", "house", "floor", "week", "sprint",
        "episode", "server", "host", "node", "port",
    }
)  # fmt: skip
# Verbs after which the subject has been said: a difference before one is in the subject.
LINKING_VERBS = frozenset(
    {
        "is", "are", "was", "were", "has", "have", "had", "will", "can", "must", "should",
        "does", "did", "gets", "got", "costs", "ships", "leaves", "starts", "runs", "read",
        "reads", "noted", "belongs", "needs", "went", "goes",
    }
)  # fmt: skip
# Verbs whose object takes several values at once: a new value is another fact.
SET_VALUED = frozenset(
    {
        "speaks", "speak", "visited", "likes", "like", "loves", "love", "enjoys", "owns", "own",
        "knows", "know", "plays", "play", "collects", "studied", "uses", "use", "follows",
        "reads", "watched", "met", "cooks", "cook", "bakes", "eats", "drinks", "wears", "attends",
    }
)  # fmt: skip
_EVENT_DATE = re.compile(
    r"^\s*(?:on|at|in|since|from)?\s*(?P<date>day\s+\d+|\d{1,2}(?:st|nd|rd|th)?\s+[A-Za-z]+|"
    r"[A-Z][a-z]+\s+\d{1,2}(?:st|nd|rd|th)?\b|\d{4}-\d{2}-\d{2})",
    re.IGNORECASE,
)
MAX_VALUE_WORDS = 4
# A value is a small part of the sentence: most of it must be the thing it describes.
MAX_VALUE_SHARE = 1 / 3
MIN_SHARED_WORDS = 2


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _is_code(token: str) -> bool:
    """A token that names a thing by itself: "INC-417", "M12", "#5521", "OPS-41"."""
    if token.startswith("#"):
        return True
    has_digit = any(ch.isdigit() for ch in token)
    has_letter = any(ch.isalpha() for ch in token)
    return has_digit and has_letter and _VALUE_SUFFIX.match(token.lower()) is None


def identifiers(text: str) -> frozenset[str]:
    """The codes and introduced numbers of a sentence, lowercased."""
    words = _tokens(text)
    found = {word.lower() for word in words if _is_code(word)}
    for before, word in pairwise(words):
        if before.lower() in IDENTIFIER_NOUNS and any(ch.isdigit() for ch in word):
            found.add(f"{before.lower()} {word.lower()}")
    return frozenset(found)


def _lead(text: str) -> str | None:
    """The name a sentence starts with ("Anna", "Anna's"), lowercased, or None."""
    words = _tokens(text)
    if not words or not words[0][:1].isupper():
        return None
    first = words[0].removesuffix("'s")
    if first.lower() in STOP_WORDS or first.lower() in {"user", "i", "my", "our"}:
        return None
    return first.lower()


def _event_date(text: str) -> str | None:
    """The date a sentence opens with ("On 3 March, ...", "On day 14, ..."), lowercased."""
    found = _EVENT_DATE.match(text)
    return " ".join(found.group("date").lower().split()) if found else None


def distinct_things(first: str, second: str) -> bool:
    """Whether the sentences name different identified things (see the module docstring)."""
    mine, theirs = identifiers(first), identifiers(second)
    if mine != theirs and (mine or theirs):
        return True
    date_a, date_b = _event_date(first), _event_date(second)
    if date_a is not None and date_b is not None and date_a != date_b:
        return True
    lead_a, lead_b = _lead(first), _lead(second)
    return lead_a is not None and lead_b is not None and lead_a != lead_b


def _regions(old: str, new: str) -> tuple[list[str], list[str], list[tuple[str, int, int, int, int]]]:
    left = [w.lower() for w in _tokens(old) if w.lower() not in NEGATIONS]
    right = [w.lower() for w in _tokens(new) if w.lower() not in NEGATIONS]
    opcodes = SequenceMatcher(None, left, right, autojunk=False).get_opcodes()
    return left, right, [op for op in opcodes if op[0] != "equal"]


def _negated(text: str) -> bool:
    return any(w.lower() in NEGATIONS or w.lower().endswith("n't") for w in _tokens(text))


def another_value_of_a_set(first: str, second: str) -> bool:
    """Whether the sentences give two values of a relation that holds many ("speaks German" /
    "speaks Italian"): both can be true, so neither disputes the other."""
    left, right, regions = _regions(first, second)
    if len(regions) != 1 or regions[0][0] != "replace" or _negated(first) != _negated(second):
        return False
    _, start_a, end_a, start_b, end_b = regions[0]
    values = "".join(left[start_a:end_a] + right[start_b:end_b])
    return not any(ch.isdigit() for ch in values) and any(word in SET_VALUED for word in left[:start_a])


def _content(words: list[str]) -> list[str]:
    return [word for word in words if word not in STOP_WORDS]


def one_attribute_changed(old: str, new: str) -> bool:
    """Whether `new` gives one attribute of `old`'s thing another value (module docstring)."""
    if distinct_things(old, new):
        return False
    left, right, regions = _regions(old, new)
    if not regions:
        return True
    if len(regions) > 1:
        return False
    _, start_a, end_a, start_b, end_b = regions[0]
    value_a, value_b = left[start_a:end_a], right[start_b:end_b]
    longest = max(len(value_a), len(value_b))
    if longest > MAX_VALUE_WORDS or longest > MAX_VALUE_SHARE * max(len(left), len(right)):
        return False
    before, after = left[:start_a], left[end_a:]
    if len(_content(before + after)) < MIN_SHARED_WORDS or not _content(before):
        return False
    if any(word in LINKING_VERBS for word in after):
        return False
    return not another_value_of_a_set(old, new)

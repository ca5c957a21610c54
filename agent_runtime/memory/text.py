"""Text normalization shared by the fact store and the workspace index.

Two notions of "the same words":
- `tokens`: lowercase words for keyword search (stop words dropped);
- `content_key`: a digest of a fact's wording with stop words, first/third person
  ("I", "my", "the user") and plural/verb "s" endings normalized, so "I prefer dark mode" and
  "The user prefers dark mode." are one fact while "... blue" and "... green" are two.
"""

from __future__ import annotations

import hashlib
import re

_WORD = re.compile(r"\w+", re.UNICODE)
_HAS_WORD = re.compile(r"\w", re.UNICODE)

STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "being",
        "but",
        "by",
        "do",
        "does",
        "did",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "hers",
        "him",
        "his",
        "how",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "our",
        "ours",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "too",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
    ]
)
# Words that change a fact's meaning although search engines often drop them.
NEGATIONS = frozenset({"not", "no", "never", "none", "nor", "without", "nothing", "nobody", "neither"})
_PERSON = {
    "i": "user",
    "me": "user",
    "my": "user",
    "mine": "user",
    "myself": "user",
    "user": "user",
    "users": "user",
}
MAX_FTS_TERMS = 16


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def has_word(text: str) -> bool:
    return _HAS_WORD.search(text) is not None


def tokens(text: str) -> list[str]:
    """Lowercase words without stop words, in order (for BM25 and keyword queries)."""
    return [w for w in words(text) if w not in STOP_WORDS]


def _stem(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def content_words(text: str) -> list[str]:
    """The words that carry a fact's meaning, normalized, in order."""
    out: list[str] = []
    for word in words(text):
        if word in _PERSON:
            out.append("user")
        elif word in NEGATIONS or word not in STOP_WORDS:
            out.append(_stem(word))
    # "the user's" tokenizes as "user", "s": the possessive adds nothing.
    return [w for w in out if w != "s"]


def content_key(text: str) -> str:
    """A digest that is equal for texts saying the same thing in the same words."""
    normalized = " ".join(content_words(text)) or " ".join(words(text))
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:32]


def is_refinement(a: str, b: str) -> bool:
    """True when one text only adds or drops qualifiers to the other.

    A changed value ("blue" -> "green"), a negation or a number in the difference means the texts
    disagree, so they are not near-duplicates even when their embeddings are very close.
    """
    left, right = set(content_words(a)), set(content_words(b))
    if not (left <= right or right <= left):
        return False
    difference = left ^ right
    return not any(w in NEGATIONS or any(ch.isdigit() for ch in w) for w in difference)


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression OR-ing the query's words, each quoted; None when it has none."""
    seen: list[str] = []
    for word in tokens(text) or words(text):
        if word not in seen:
            seen.append(word)
        if len(seen) >= MAX_FTS_TERMS:
            break
    if not seen:
        return None
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in seen)


def one_line(text: str, limit: int = 0) -> str:
    flat = " ".join(text.split())
    if limit and len(flat) > limit:
        return flat[: limit - 1] + "…"
    return flat

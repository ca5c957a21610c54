"""The embedding models the memory benchmarks can run here, in-process as the gateway runs
them: each with its name, vector size and search floor. Models whose package is missing are
left out."""

from __future__ import annotations

import importlib.util

from agent_runtime.memory import LOCAL_EMBEDDING_MODEL, Embedder, MemoryConfig, search_floor

Model = tuple[str, Embedder, int, float]


class InProcess:
    """A gateway model called in-process: semantic, with its name."""

    semantic = True

    def __init__(self, model: str) -> None:
        self.model = model

    def __call__(self, texts: list[str]) -> list[list[float]]:
        from orchestrator.gateway.providers.local_embedding import embed_texts

        return embed_texts(texts)


def available_models() -> list[Model]:
    models: list[Model] = []
    if importlib.util.find_spec("wordllama") is not None:
        embedder = InProcess(LOCAL_EMBEDDING_MODEL)
        models.append((LOCAL_EMBEDDING_MODEL, embedder, 256, search_floor(MemoryConfig(), embedder)))
    return models

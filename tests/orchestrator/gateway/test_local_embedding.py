"""The built-in local embedding model `wordllama-256` through the real gateway: vectors with
meaning, computed in the orchestrator's process (no upstream request, no network), free of
charge, loaded once; and an agent's memory store on it recording a contradiction without a
subject key."""

from __future__ import annotations

import textwrap
from pathlib import Path

import openai
import pytest
from gateway_harness import Launch

from agent_runtime.memory.embeddings import GatewayEmbedder
from agent_runtime.memory.models import LOCAL_EMBEDDING_MODEL, FactSource, MemoryConfig, SaveOutcome
from agent_runtime.memory.store import MemoryStore
from orchestrator.config.fleet import ConfigError
from orchestrator.config.loader import load_fleet
from orchestrator.running_agents.session import runtime_config

pytest.importorskip("wordllama")

from orchestrator.gateway.providers import local_embedding
from orchestrator.gateway.providers.loaded_once import LoadedOnce

FLEET = """\
  embedding:
    model: wordllama-256
agents:
  alice:
    role: tester
"""


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_embeddings_carry_meaning_and_never_leave_the_orchestrator(launch: Launch) -> None:
    orch = launch(FLEET)
    client = orch.client("alice")
    texts = [
        "The user lives in Berlin",
        "The user's home is in Berlin",
        "Quarterly stock prices fell sharply",
    ]
    result = client.embeddings.create(model=LOCAL_EMBEDDING_MODEL, input=texts)
    vectors = [item.embedding for item in result.data]
    assert [len(v) for v in vectors] == [256] * 3
    assert cosine(vectors[0], vectors[0]) == pytest.approx(1.0, abs=1e-5)
    assert cosine(vectors[0], vectors[1]) > 0.6 > 0.2 > cosine(vectors[0], vectors[2])
    floats = client.embeddings.create(model=LOCAL_EMBEDDING_MODEL, input=texts[0], encoding_format="float")
    assert floats.data[0].embedding == pytest.approx(vectors[0], abs=1e-6)
    small = orch.http(orch.tokens["alice"]).post(
        "/v1/embeddings", json={"model": LOCAL_EMBEDDING_MODEL, "input": texts[0], "dimensions": 64}
    )
    [item] = small.json()["data"]
    assert len(item["embedding"]) == 64
    assert cosine(item["embedding"], item["embedding"]) == pytest.approx(1.0, abs=1e-5)
    assert orch.upstream.requests == []
    rows = orch.gateway.ledger.rows("alice")
    assert [row.kind for row in rows] == ["embeddings"] * 3
    assert all(row.cost_usd == 0 for row in rows) and rows[-1].tokens_in > 0
    assert local_embedding.MODEL.loaded


def test_a_size_it_cannot_give_and_a_chat_request_are_refused(launch: Launch) -> None:
    orch = launch(FLEET)
    refused = orch.http(orch.tokens["alice"]).post(
        "/v1/embeddings", json={"model": LOCAL_EMBEDDING_MODEL, "input": "x", "dimensions": 100}
    )
    assert refused.status_code >= 400
    assert "64, 128, 256" in refused.text
    with pytest.raises(openai.APIStatusError):
        orch.client("alice").chat.completions.create(
            model=LOCAL_EMBEDDING_MODEL, messages=[{"role": "user", "content": "hi"}]
        )


def test_the_weights_load_once_from_the_package_without_any_connection(
    refused_connections: list[object],
) -> None:
    once = LoadedOnce(local_embedding._read_package_files)
    assert not once.loaded
    first = once.get()
    assert once.get() is first and once.loaded
    [vector] = first.embed(["offline"], norm=True)
    assert len(vector) == 256
    assert refused_connections == []


def test_a_memory_store_on_the_gateway_records_a_keyless_contradiction(launch: Launch) -> None:
    orch = launch(FLEET)
    embedder = GatewayEmbedder(orch.url, orch.tokens["alice"], LOCAL_EMBEDDING_MODEL, None)
    assert embedder.semantic and embedder.probe_dimensions() == 256
    config = MemoryConfig(dimensions=256, embedding_model=LOCAL_EMBEDDING_MODEL)
    with MemoryStore(":memory:", embedder=embedder, config=config) as store:
        stated = store.save(
            "The user is allergic to peanuts", category="health", source=FactSource.USER_STATED
        )
        guessed = store.save(
            "The user is not allergic to peanuts", category="food", source=FactSource.INFERRED
        )
        assert guessed.outcome is SaveOutcome.CONTRADICTION and guessed.fact_id == stated.fact_id
        assert [c.text for c in store.contradictions()] == ["The user is not allergic to peanuts"]
    embedder.close()


def _problems(tmp_path: Path, text: str) -> str:
    path = tmp_path / "fleet.yaml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(ConfigError) as caught:
        load_fleet(path)
    return str(caught.value)


def test_the_fleet_file_names_it_as_an_embedding_model_only_and_needs_its_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    as_chat = _problems(
        tmp_path,
        """\
        version: 1
        fleet: demo
        agents:
          alpha:
            model: wordllama-256
        """,
    )
    assert "agents.alpha.model: model 'wordllama-256' is an embedding model" in as_chat
    too_large = _problems(
        tmp_path,
        """\
        version: 1
        fleet: demo
        llm:
          embedding:
            model: wordllama-256
            dimensions: 1536
        agents:
          alpha: {}
        """,
    )
    assert (
        "llm.embedding.dimensions: model 'wordllama-256' gives vectors of 64, 128, 256 dimensions"
        in too_large
    )
    monkeypatch.setattr("orchestrator.config.loader.local_embedding_installed", lambda *_: False)
    missing = _problems(
        tmp_path,
        """\
        version: 1
        fleet: demo
        llm:
          embedding:
            model: wordllama-256
        agents:
          alpha: {}
        """,
    )
    assert "llm.embedding.model: model 'wordllama-256' needs the Python package 'wordllama'" in missing
    assert "flotilla[embeddings-local]" in missing


def test_a_threshold_set_in_the_fleet_file_reaches_the_agent(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            version: 1
            fleet: demo
            llm:
              embedding:
                model: wordllama-256
                contradiction_similarity: 0.7
            agents:
              alpha: {}
            """
        )
    )
    config = runtime_config(load_fleet(path), "alpha")
    assert config.embedding_model == LOCAL_EMBEDDING_MODEL and config.contradiction_similarity == 0.7

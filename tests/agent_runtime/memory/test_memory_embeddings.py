"""Embeddings: the gateway client over real HTTP, keyword-only fallback after repeated failures,
retry with backoff, and backfill of the vectors missed while embeddings were down."""

from __future__ import annotations

import base64
import json
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import DIMS, ManualClock, StoreFactory, SwitchableEmbedder

from agent_runtime.memory.embeddings import EmbeddingError, EmbeddingService, GatewayEmbedder
from agent_runtime.memory.models import MemoryMode
from agent_runtime.testing.embeddings import deterministic_embedding


class _Gateway(BaseHTTPRequestHandler):
    """A loopback stand-in for the orchestrator's /v1/embeddings (test model)."""

    status = 200
    seen: list[dict[str, object]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).seen.append({"path": self.path, "auth": self.headers.get("authorization"), "body": body})
        if type(self).status != 200:
            self._answer(type(self).status, {"error": "budget_exhausted", "message": "no budget left"})
            return
        data = []
        for index, text in enumerate(body["input"]):
            vector = deterministic_embedding(text, body["dimensions"])
            packed = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": packed})
        data.reverse()  # the client must order by index
        self._answer(200, {"object": "list", "data": data, "model": "test"})

    def _answer(self, status: int, payload: dict[str, object]) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *_: object) -> None:
        return


@pytest.fixture
def gateway_url() -> Iterator[str]:
    _Gateway.status, _Gateway.seen = 200, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Gateway)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_gateway_embedder_posts_openai_requests_and_decodes_base64(gateway_url: str) -> None:
    tokens = iter(["first-token", "rotated-token"])
    embedder = GatewayEmbedder(gateway_url, lambda: next(tokens), "test", DIMS)
    vectors = embedder(["alpha beta", "gamma"])
    assert [round(v, 5) for v in vectors[0]] == [
        round(v, 5) for v in deterministic_embedding("alpha beta", DIMS)
    ]
    assert [round(v, 5) for v in vectors[1]] == [round(v, 5) for v in deterministic_embedding("gamma", DIMS)]
    embedder(["again"])
    first, second = _Gateway.seen
    assert first["path"] == "/v1/embeddings"
    assert first["auth"] == "Bearer first-token"
    assert second["auth"] == "Bearer rotated-token"
    assert first["body"] == {
        "model": "test",
        "input": ["alpha beta", "gamma"],
        "dimensions": DIMS,
        "encoding_format": "base64",
    }
    embedder.close()


def test_gateway_embedder_reports_refusals_and_unreachable_gateways(gateway_url: str) -> None:
    _Gateway.status = 429
    with pytest.raises(EmbeddingError, match="HTTP 429"):
        GatewayEmbedder(gateway_url, "token", "test", DIMS)(["x"])
    with pytest.raises(EmbeddingError, match="failed"):
        GatewayEmbedder("http://127.0.0.1:9", "token", "test", DIMS, timeout_s=2)(["x"])


def test_three_failures_switch_to_keyword_mode_and_backoff_retries_later(
    open_store: StoreFactory, embedder: SwitchableEmbedder, clock: ManualClock
) -> None:
    store = open_store()
    store.save("The staging server is called Bramble", category="infra")
    assert store.status().mode is MemoryMode.HYBRID

    embedder.down = True
    for text in ("The build runs on Fridays", "The VPN gateway is in Lisbon", "The printer is on floor 3"):
        store.save(text, category="infra")
    status = store.status()
    assert status.mode is MemoryMode.KEYWORD
    assert status.consecutive_failures == 3
    # 30 s, shortened by up to a fifth at random (agent_runtime.backoff) so agents spread out.
    assert status.next_retry_in_s is not None and 24.0 <= status.next_retry_in_s <= 30.0
    assert status.missing_vectors == 3
    assert "unreachable" in (status.last_error or "")

    # Keyword-only search still finds facts, and does not call the embedder while it rests.
    calls = embedder.calls
    hits = store.search("staging server Bramble")
    assert [h.fact.text for h in hits] == ["The staging server is called Bramble"]
    assert hits[0].tier == "keyword"
    assert embedder.calls == calls

    # The retry after the pause fails too: the pause doubles.
    clock.advance(31)
    store.search("printer")
    assert embedder.calls == calls + 1
    retry_in = store.status().next_retry_in_s
    assert retry_in is not None and 48.0 <= retry_in <= 60.0

    # Back up: the next retry succeeds, the mode returns, and the backfill embeds what was missed.
    embedder.down = False
    clock.advance(61)
    assert store.search("floor 3 printer")[0].fact.text == "The printer is on floor 3"
    assert store.status().mode is MemoryMode.HYBRID
    assert store.backfill_vectors() == 3
    assert store.status().missing_vectors == 0
    assert store.search("VPN gateway Lisbon")[0].vector_score > 0.5


def test_no_embedding_model_means_keyword_only_from_the_start(open_store: StoreFactory) -> None:
    store = open_store(embedder=None)
    store.save("Deploys happen on Tuesdays")
    status = store.status()
    assert status.mode is MemoryMode.KEYWORD
    assert status.missing_vectors == 1
    assert [h.fact.text for h in store.search("deploys Tuesdays")] == ["Deploys happen on Tuesdays"]
    assert store.backfill_vectors() == 0


def test_episodes_saved_while_down_are_backfilled(
    open_store: StoreFactory, embedder: SwitchableEmbedder
) -> None:
    store = open_store()
    embedder.down = True
    store.add_episode("2025-05-01T09:00:00Z", "2025-05-01T10:00:00Z", ["t1"], "Reviewed the hiring plan")
    embedder.down = False
    assert store.backfill_vectors() == 1
    assert store.query("SELECT COUNT(*) FROM episodes WHERE embedding IS NULL")[0][0] == 0


def test_the_service_refuses_wrong_sized_vectors_as_a_failure() -> None:
    service = EmbeddingService(lambda texts: [[1.0, 0.0]] * len(texts), DIMS, failure_limit=1)
    assert service.embed(["x"]) is None
    assert service.mode is MemoryMode.KEYWORD
    assert "expected 64" in (service.last_error or "")

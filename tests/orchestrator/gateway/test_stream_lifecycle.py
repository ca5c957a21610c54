"""A stream the agent abandons midway is settled as interrupted and its upstream is closed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from gateway_harness import REPO_ROOT  # noqa: F401  (puts the repository on sys.path)

from orchestrator.config.loader import load_fleet
from orchestrator.events import EventBus
from orchestrator.fleet.view import FleetView
from orchestrator.gateway.models import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    EmbeddingRequest,
    EmbeddingResponse,
)
from orchestrator.gateway.providers.base import Provider
from orchestrator.gateway.service import Gateway
from orchestrator.lifecycle import Controls
from orchestrator.state.db import Database


class EndlessProvider(Provider):
    """Streams one chunk, then waits forever; records whether its stream was closed."""

    name = "test"

    def __init__(self) -> None:
        self.closed = False

    async def complete(self, request: ChatCompletionRequest) -> ChatCompletion:
        raise NotImplementedError

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        raise NotImplementedError

    async def stream(self, request: ChatCompletionRequest) -> AsyncIterator[ChatCompletionChunk]:
        try:
            yield ChatCompletionChunk.model_validate(
                {
                    "id": "x",
                    "created": 0,
                    "model": "test",
                    "choices": [{"index": 0, "delta": {"content": "one two"}}],
                }
            )
            await asyncio.Event().wait()
        finally:
            self.closed = True


def test_abandoned_stream_is_settled_and_closed(tmp_path: Path) -> None:
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text("version: 1\nfleet: gwlife\nagents:\n  alice: {}\n")
    db = Database(tmp_path / "state.db")
    gateway = Gateway(db, FleetView(load_fleet(fleet_file)), Controls(db), EventBus(db))
    provider = EndlessProvider()
    gateway._test = provider  # type: ignore[assignment]
    request = ChatCompletionRequest.model_validate(
        {"model": "test", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    )

    async def scenario() -> bytes:
        _, events = await gateway.open_stream("alice", request)
        first = await anext(events)
        await events.aclose()  # what the server does when the agent hangs up
        return first

    first = asyncio.run(scenario())
    assert b"one two" in first
    assert provider.closed
    [row] = gateway.ledger.rows("alice")
    assert row.status == "interrupted" and row.estimated
    assert row.tokens_in > 0 and row.tokens_out == gateway.counter.count("one two")
    db.close()

"""The agent's chat client against a real HTTP server: streaming, errors, retries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from agent_runtime.work.chat import ChatClient, ChatError
from orchestrator.testing.server import serve_app


class Script:
    """Answers each POST with the next (status, body, content type) of a list."""

    def __init__(self, answers: list[tuple[int, bytes, bytes]]) -> None:
        self.answers = answers
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.requests.append(json.loads(body))
        self.authorizations.append(dict(scope["headers"]).get(b"authorization", b"").decode())
        status, content, kind = self.answers.pop(0)
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", kind)]})
        await send({"type": "http.response.body", "body": content})


JSON = b"application/json"
SSE = b"text/event-stream"


def sse(*chunks: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[Any] = []

    def start(script: Script) -> ChatClient:
        context = serve_app(script)
        url = context.__enter__()
        servers.append(context)
        return ChatClient(f"{url}/v1", "tok-1", max_retries=2)

    yield start
    for context in servers:
        context.__exit__(None, None, None)


def test_streamed_reply_yields_its_chunks_and_sends_the_request(serve: Any) -> None:
    chunks: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"content": "hel"}}]},
        {"choices": [{"index": 0, "delta": {"content": "lo"}}]},
        {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2}},
    ]
    script = Script([(200, sse(*chunks), SSE)])
    client = serve(script)
    got = list(client.stream("m1", [{"role": "user", "content": "hi"}], None))
    assert got == chunks
    assert script.requests[0]["model"] == "m1"
    assert script.requests[0]["stream"] is True
    assert "tools" not in script.requests[0]
    assert script.authorizations == ["Bearer tok-1"]


def test_busy_gateway_is_retried_then_answers(serve: Any) -> None:
    reply = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}
    busy = json.dumps({"error": {"message": "try later"}}).encode()
    script = Script([(503, busy, JSON), (200, json.dumps(reply).encode(), JSON)])
    assert serve(script).create("m1", [{"role": "user", "content": "hi"}]) == reply
    assert len(script.requests) == 2


def test_refusal_names_the_status_and_the_gateway_message(serve: Any) -> None:
    refused = json.dumps({"error": {"message": "budget exhausted for agent a"}}).encode()
    script = Script([(402, refused, JSON)])
    with pytest.raises(ChatError, match="HTTP 402: budget exhausted for agent a"):
        serve(script).create("m1", [{"role": "user", "content": "hi"}])
    assert len(script.requests) == 1  # not a status worth a retry


def test_error_inside_a_started_stream_is_raised(serve: Any) -> None:
    body = sse(
        {"choices": [{"index": 0, "delta": {"content": "par"}}]}, {"error": {"message": "upstream died"}}
    )
    client = serve(Script([(200, body, SSE)]))
    with pytest.raises(ChatError, match="upstream died"):
        list(client.stream("m1", [{"role": "user", "content": "hi"}], None))

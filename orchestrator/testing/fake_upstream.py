"""A fake OpenAI-compatible provider for tests: scripted replies, recorded requests, real HTTP.

    upstream = FakeUpstream()
    upstream.script(Reply.error(429, retry_after=0), Reply.text("hello"))
    with upstream.serve() as base_url:        # e.g. http://127.0.0.1:43121/v1
        ...                                   # point a fleet provider's base_url at it
    upstream.requests[0].authorization        # what the gateway sent as Authorization

Each request consumes the next scripted reply; when the script is empty the fake answers with
a text naming the last user message. `hold()` parks chat requests until `release()`, which
lets a test keep calls in flight at the same time.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from orchestrator.testing.server import serve_app

HOLD_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Reply:
    """One scripted answer: text, tool calls, or an HTTP error."""

    text: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200
    error_message: str = ""
    retry_after: float | None = None
    prompt_tokens: int = 10
    completion_tokens: int = 5
    cached_tokens: int = 0
    break_stream: bool = False
    stream_usage: bool = True  # False: a stream that never reports usage, even when asked

    @classmethod
    def say(
        cls, text: str, *, prompt_tokens: int = 10, completion_tokens: int = 5, cached_tokens: int = 0
    ) -> Reply:
        return cls(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cached_tokens=cached_tokens,
        )

    @classmethod
    def call(cls, name: str, arguments: dict[str, Any]) -> Reply:
        return cls(tool_calls=[(name, arguments)])

    @classmethod
    def error(cls, status: int, message: str = "scripted failure", retry_after: float | None = None) -> Reply:
        return cls(status=status, error_message=message, retry_after=retry_after)

    @classmethod
    def broken_stream(cls, text: str) -> Reply:
        """A stream that sends one chunk and then an error event."""
        return cls(text=text, break_stream=True)


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")


class FakeUpstream:
    def __init__(self, model: str = "fake-model") -> None:
        self.model = model
        self.requests: list[RecordedRequest] = []
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._gate = threading.Event()
        self._gate.set()
        self.app = self._build_app()

    # ------------------------------------------------------------------ test controls

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def reset(self) -> None:
        """Forget the script and the recorded requests, and let held requests go."""
        with self._lock:
            self._script.clear()
            self.requests.clear()
        self._gate.set()

    def hold(self) -> None:
        """Park chat requests (after recording them) until `release()`."""
        self._gate.clear()

    def release(self) -> None:
        self._gate.set()

    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def wait_for_requests(self, count: int, timeout_s: float = 15.0) -> bool:
        """Wait until at least `count` chat requests arrived; False on timeout."""
        deadline = time.monotonic() + timeout_s
        while len(self.chat_requests()) < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    @contextmanager
    def serve(self) -> Iterator[str]:
        """Serve on a free loopback port; yields the OpenAI-style base URL (ending in /v1)."""
        with serve_app(self.app) as url:
            yield url + "/v1"

    # ------------------------------------------------------------------ the server

    def _record(self, request: Request, body: dict[str, Any]) -> Reply | None:
        with self._lock:
            self.requests.append(RecordedRequest(request.url.path, dict(request.headers), body))
            return self._script.popleft() if self._script else None

    def _build_app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions", response_model=None)
        async def chat(request: Request) -> Response:
            body = await request.json()
            reply = self._record(request, body) or Reply.say(f"fake reply to: {_last_user_text(body)}")
            await anyio.to_thread.run_sync(self._gate.wait, HOLD_TIMEOUT_S)
            if reply.status != 200:
                return _error_response(reply)
            if body.get("stream"):
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                return StreamingResponse(self._events(reply, include_usage), media_type="text/event-stream")
            return JSONResponse(self._completion(reply))

        @app.post("/v1/embeddings", response_model=None)
        async def embeddings(request: Request) -> Response:
            body = await request.json()
            reply = self._record(request, body)
            if reply is not None and reply.status != 200:
                return _error_response(reply)
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            dims = int(body.get("dimensions") or 8)
            data = [
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": [float(len(str(text)) % 7)] + [0.5] * (dims - 1),
                }
                for i, text in enumerate(inputs)
            ]
            usage = {"prompt_tokens": 3 * len(inputs), "total_tokens": 3 * len(inputs)}
            return JSONResponse({"object": "list", "data": data, "model": self.model, "usage": usage})

        return app

    def _usage(self, reply: Reply) -> dict[str, Any]:
        return {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
        }

    def _completion(self, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_fake_{i}",
                    "type": "function",
                    "function": {"name": n, "arguments": json.dumps(a)},
                }
                for i, (n, a) in enumerate(reply.tool_calls)
            ]
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
            "usage": self._usage(reply),
        }

    async def _events(self, reply: Reply, include_usage: bool) -> AsyncIterator[bytes]:
        head = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time())}
        head["model"] = self.model

        def event(payload: dict[str, Any]) -> bytes:
            return b"data: " + json.dumps(payload).encode() + b"\n\n"

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return event(head | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

        yield chunk({"role": "assistant", "content": ""})
        for word in (reply.text or "").split(" "):
            if reply.break_stream:
                yield chunk({"content": word})
                yield event({"error": {"message": "scripted mid-stream failure", "type": "server_error"}})
                return
            yield chunk({"content": word + " "})
        for i, (name, arguments) in enumerate(reply.tool_calls):
            function = {"name": name, "arguments": json.dumps(arguments)}
            call = {"index": i, "id": f"call_fake_{i}", "type": "function", "function": function}
            yield chunk({"tool_calls": [call]})
        yield chunk({}, _finish(reply))
        if include_usage and reply.stream_usage:
            yield event(head | {"choices": [], "usage": self._usage(reply)})
        yield b"data: [DONE]\n\n"


def _finish(reply: Reply) -> str:
    return "tool_calls" if reply.tool_calls else "stop"


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message["content"])
    return ""


def _error_response(reply: Reply) -> JSONResponse:
    headers = {"retry-after": f"{reply.retry_after:g}"} if reply.retry_after is not None else {}
    body = {"error": {"message": reply.error_message, "type": "fake_error", "code": str(reply.status)}}
    return JSONResponse(body, status_code=reply.status, headers=headers)

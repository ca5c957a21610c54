"""In-process fakes for the agent runtime tests, served over real HTTP on 127.0.0.1.

`FakeModel` is an OpenAI-compatible chat endpoint whose replies come from a Python function
(streaming and non-streaming, tool calls, usage, scripted failures) plus the gateway's token
count route. `FakeOrchestrator` adds the agent routes, with an inbox the test fills.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request, Response, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import TypeAdapter

from agent_runtime.protocol import (
    AgentEvent,
    AgentRuntimeConfig,
    ChannelCheckIn,
    ChannelConfig,
    ChannelDone,
    ChannelForgotten,
    ChannelNext,
    ChannelProgress,
    ChannelRequest,
    CheckIn,
    CheckInReply,
    ForgottenCopies,
    InboxItem,
    ReplyChunk,
    RunRecord,
    TokenCountRequest,
    TokenCountResult,
    WorkResult,
)

_frames: TypeAdapter[ChannelRequest] = TypeAdapter(ChannelRequest)


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200

    @classmethod
    def call(cls, name: str, **arguments: Any) -> Reply:
        return cls(tool_calls=[(name, arguments)])


Responder = Callable[[dict[str, Any]], Reply]


def last_text(body: dict[str, Any]) -> str:
    return str(body["messages"][-1].get("content") or "")


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"] if m["role"] == "system")


def _sse(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload)}\n\n"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": "fake",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _stream(reply: Reply) -> Iterator[str]:
    yield _sse(_chunk({"role": "assistant", "content": ""}))
    text = reply.text
    for start in range(0, len(text), 40):
        yield _sse(_chunk({"content": text[start : start + 40]}))
    for index, (name, arguments) in enumerate(reply.tool_calls):
        raw = json.dumps(arguments)
        half = len(raw) // 2
        first = {"index": index, "id": f"call_{index}_{time.time_ns()}", "type": "function"}
        yield _sse(_chunk({"tool_calls": [{**first, "function": {"name": name, "arguments": raw[:half]}}]}))
        yield _sse(_chunk({"tool_calls": [{"index": index, "function": {"arguments": raw[half:]}}]}))
    yield _sse(_chunk({}, "tool_calls" if reply.tool_calls else "stop"))
    usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    yield _sse({**_chunk({}), "choices": [], "usage": usage})
    yield "data: [DONE]\n\n"


def _completion(reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(reply.tool_calls)
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


class FakeModel:
    """Chat completions answered by `responder`; every request body is kept in `requests`."""

    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.call_keys: list[str | None] = []  # the Idempotency-Key of each chat request
        self.count_calls = 0
        self.count_fails = False
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self._chat)
        self.app.post("/v1/tokens/count")(self._count)

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        self.call_keys.append(request.headers.get("idempotency-key"))
        reply = self.responder(body)
        if reply.status != 200:
            error = {"error": "scripted", "message": f"scripted failure {reply.status}", "details": []}
            return JSONResponse(error, status_code=reply.status)
        if body.get("stream"):
            return StreamingResponse(_stream(reply), media_type="text/event-stream")
        return JSONResponse(_completion(reply))

    async def _count(self, body: TokenCountRequest) -> Response:
        self.count_calls += 1
        if self.count_fails:
            return JSONResponse(
                {"error": "down", "message": "counting is down", "details": []}, status_code=503
            )
        counts = [math.ceil(len(text) / 4) for text in body.texts]
        return JSONResponse(TokenCountResult(counts=counts, tokenizer="cl100k").model_dump())

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return self.requests


class FakeOrchestrator(FakeModel):
    """The agent routes of the orchestrator, with an inbox fed by `put`."""

    def __init__(self, config: AgentRuntimeConfig, responder: Responder, token: str) -> None:
        super().__init__(responder)
        self.config = config
        self.token = token
        self.inbox: list[InboxItem] = []
        self.results: dict[str, WorkResult] = {}
        self.progress: dict[str, list[str]] = {}
        self.runs: list[RunRecord] = []
        self.runs_down = 0
        """How many run records to answer 503 to, as an orchestrator restarting would."""
        self.forgotten: list[list[str]] = []
        self.events: list[AgentEvent] = []
        self.checkins: list[CheckIn] = []
        self.config_failures = 0
        self.config_calls = 0
        self._lock = threading.Lock()
        app = self.app
        app.get("/agent/v1/config")(self._config)
        app.post("/agent/v1/checkin")(self._checkin)
        app.get("/agent/v1/inbox/next")(self._next)
        app.post("/agent/v1/inbox/{item_id}/progress")(self._progress)
        app.post("/agent/v1/inbox/{item_id}/done")(self._done)
        app.post("/agent/v1/runs")(self._runs)
        app.post("/agent/v1/events")(self._events)
        app.websocket("/agent/v1/channel")(self._channel)

    def put(self, item: InboxItem) -> None:
        with self._lock:
            self.inbox.append(item)

    def _authorized(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {self.token}"

    async def _config(self, request: Request) -> Response:
        if not self._authorized(request):
            return JSONResponse(
                {"error": "unauthorized", "message": "bad token", "details": []}, status_code=401
            )
        status, body = self._serve_config()
        return Response(body, status_code=status, media_type="application/json")

    def _serve_config(self) -> tuple[int, str]:
        self.config_calls += 1
        if self.config_calls <= self.config_failures:
            return 503, '{"error": "starting", "message": "not ready", "details": []}'
        return 200, self.config.model_dump_json()

    async def _checkin(self, body: CheckIn) -> CheckInReply:
        self.checkins.append(body)
        return CheckInReply(config_hash=self.config.config_hash)

    async def _next(self, wait: float = 0) -> Response:
        item = await self._claim(wait)
        return Response(status_code=204) if item is None else JSONResponse(item.model_dump(mode="json"))

    async def _claim(self, wait: float) -> InboxItem | None:
        deadline = time.monotonic() + min(wait, 2.0)
        while True:
            with self._lock:
                if self.inbox:
                    return self.inbox.pop(0)
            if time.monotonic() >= deadline:
                return None
            await asyncio.sleep(0.02)

    async def _channel(self, websocket: WebSocket) -> None:
        """The channel's frames for an agent's own work, answered one at a time."""
        if websocket.headers.get("authorization") != f"Bearer {self.token}":
            await websocket.close(code=1008)
            return
        await websocket.accept()
        try:
            while True:
                frame = _frames.validate_json(await websocket.receive_text())
                status, body = 204, "null"
                if isinstance(frame, ChannelConfig):
                    status, body = self._serve_config()
                elif isinstance(frame, ChannelCheckIn):
                    status, body = 200, (await self._checkin(frame.checkin)).model_dump_json()
                elif isinstance(frame, ChannelNext):
                    item = await self._claim(frame.wait_s)
                    if item is not None:
                        status, body = 200, item.model_dump_json()
                elif isinstance(frame, ChannelDone):
                    self.results[frame.item_id] = frame.result
                elif isinstance(frame, ChannelProgress):
                    self.progress.setdefault(frame.item_id, []).append(frame.delta)
                elif isinstance(frame, ChannelForgotten):
                    self.forgotten.append(frame.texts)
                    status, body = 200, ForgottenCopies(versions=0, rows=0).model_dump_json()
                else:
                    status, body = 404, '{"error": "not_found", "message": "not served here", "details": []}'
                await websocket.send_text(f'{{"id": {frame.id}, "status": {status}, "body": {body}}}')
        except WebSocketDisconnect:
            pass

    async def _progress(self, item_id: str, body: ReplyChunk) -> Response:
        self.progress.setdefault(item_id, []).append(body.delta)
        return Response(status_code=204)

    async def _done(self, item_id: str, body: WorkResult) -> Response:
        self.results[item_id] = body
        return Response(status_code=204)

    async def _runs(self, body: RunRecord) -> Response:
        if self.runs_down > 0:
            self.runs_down -= 1
            return JSONResponse({"error": "down", "message": "restarting", "details": []}, status_code=503)
        self.runs.append(body)
        return Response(status_code=204)

    async def _events(self, body: AgentEvent) -> Response:
        self.events.append(body)
        return Response(status_code=204)

"""Size limits on what the API accepts (fleet.yaml `limits:`), each refused with a 413 naming it.

`BodyLimit` caps every HTTP request body before a route sees it; the WebSocket channel's frames
are capped by the server's maximum message size (see orchestrator.server). The checks below cap
what a valid request carries: operator messages, ask inputs and tell texts, work results and
agent events, whichever way they arrive.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_runtime.protocol import AskRequest, ErrorBody, RunRecord, TellRequest, WorkResult
from orchestrator.api.errors import ApiError
from orchestrator.config.limits import LimitsConfig
from orchestrator.services import Services

TOO_LARGE = "too_large"


def _limits(services: Services) -> LimitsConfig:
    return services.fleet.config.limits


def too_large(what: str, limit_name: str, limit: int, size: int) -> ApiError:
    """A 413 that names the limit, its value and the size offered."""
    return ApiError(
        413,
        TOO_LARGE,
        f"{what} is {size} bytes, over limits.{limit_name} ({limit} bytes)",
        [f"limit: limits.{limit_name} = {limit} bytes", f"size: {size} bytes"],
    )


def _check(services: Services, what: str, limit_name: str, size: int) -> None:
    limit = _limits(services).bytes_of(limit_name)
    if size > limit:
        raise too_large(what, limit_name, limit, size)


def _json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), default=str).encode())


def check_message(services: Services, text: str) -> None:
    _check(services, "the message", "message", len(text.encode()))


def payload_size(request: AskRequest | TellRequest) -> int:
    """The bytes a tell's text or an ask's input puts into its recipient's inbox."""
    if isinstance(request, TellRequest):
        return len(request.text.encode())
    return _json_size(request.input)


def check_payload(services: Services, request: AskRequest | TellRequest) -> None:
    """An ask's input or a tell's text becomes an inbox item: capped so it can always be delivered."""
    what = "the tell text" if isinstance(request, TellRequest) else "the ask input"
    _check(services, what, "payload", payload_size(request))


def result_size(result: WorkResult) -> int:
    return len(result.model_dump_json().encode())


def check_result(services: Services, result: WorkResult) -> None:
    _check(services, "the work result", "payload", result_size(result))


def check_run(services: Services, record: RunRecord) -> None:
    """A run record is stored whole: capped like a work result."""
    _check(services, "the run record", "payload", len(record.model_dump_json().encode()))


def check_approval(services: Services, arguments: dict[str, Any]) -> None:
    """An approval request is stored whole with the call's arguments: capped like a payload."""
    _check(services, "the approval request's arguments", "payload", _json_size(arguments))


def check_event(services: Services, data: dict[str, Any]) -> None:
    _check(services, "the event data", "event", _json_size(data))


# --- HTTP bodies ---------------------------------------------------------------------------


def _body(error: ErrorBody) -> bytes:
    return error.model_dump_json().encode()


class BodyLimit:
    """ASGI middleware: a request body over the limit is answered 413 before any route runs.

    The body is read here (up to the limit) and replayed to the app, so a sender that lies in
    Content-Length, or sends chunks without one, is cut off at the limit all the same.
    """

    def __init__(self, app: ASGIApp, limit_of: Callable[[], int]) -> None:
        self.app = app
        self._limit_of = limit_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit_of()
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _refuse(send, limit, declared)
            return
        chunks: list[bytes] = []
        size = 0
        first: Message | None = None
        while True:
            message = await receive()
            if message["type"] != "http.request":
                first = message  # the client went away: the app sees it as it would have
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _refuse(send, limit, size)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replay: list[Message] = [
            first or {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        ]

        async def replayed() -> Message:
            return replay.pop() if replay else await receive()

        await self.app(scope, replayed, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _refuse(send: Send, limit: int, size: int) -> None:
    error = too_large("the request body", "request_body", limit, size).body
    body = _body(error)
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})

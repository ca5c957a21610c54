"""Chat completions through the orchestrator's OpenAI-compatible gateway, over plain HTTP.

The agent needs one endpoint (`POST /v1/chat/completions`, streamed or not) and the JSON it
returns. A full SDK would cost the first work item about half a CPU-second of imports (several
hundred response models) and the worker ~10 MiB for as long as it stays loaded; this module is
a few functions over the agent's own HTTP client (`agent_runtime.transport.httpclient`).

Chunks and responses are the wire format's JSON objects (dicts), as the gateway sends them.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agent_runtime.protocol import IDEMPOTENCY_HEADER
from agent_runtime.sse import iter_sse
from agent_runtime.transport.httpclient import ConnectFailed, HttpClient, HttpError, Response, http_client

# A model may think for minutes before its first token.
READ_TIMEOUT_S = 600.0
RETRY_DELAY_S = 0.5
# Statuses worth a second try: the gateway or the provider was busy or briefly unavailable.
RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
DONE = "[DONE]"
# The gateway's word that it already retried upstream: one retry layer, never two.
SHOULD_RETRY_HEADER = "x-should-retry"
# An orchestrator that restarts is away for seconds: a refused connection (the request never
# reached it, so nothing was charged) is tried again for this long, the delay capped.
OUTAGE_WAIT_S = 90.0
OUTAGE_DELAY_MAX_S = 5.0


def new_call_key() -> str:
    """The idempotency key of one logical model call (sent again with each try of that call)."""
    return uuid.uuid4().hex


class ChatError(RuntimeError):
    """The model call failed; the text is the gateway's message when it sent one."""


class StreamBroken(ChatError):
    """The reply stream ended before its end: the gateway went away during the call. The call
    may be made again with the same idempotency key: one the gateway had settled is answered from
    its record, not charged twice; a cut one the ledger settled (or recovered) by itself."""


def error_text(response: Response) -> str:
    """`HTTP <status>: <message>` from the gateway's JSON error, else the status alone."""
    try:
        body = json.loads(response.read() or b"null")
    except ValueError:
        body = None
    message = None
    if isinstance(body, dict):
        nested = body.get("error")
        message = nested.get("message") if isinstance(nested, dict) else None
        message = message or body.get("message")
    return f"HTTP {response.status_code}: {message or response.reason_phrase}"


class ChatClient:
    def __init__(self, base_url: str, api_key: str, max_retries: int = 2) -> None:
        """`base_url` ends before `/chat/completions` (e.g. `http://host:port/v1`)."""
        self.api_key = api_key
        self.max_retries = max_retries
        self._http = http_client(base_url, READ_TIMEOUT_S)

    def close(self) -> None:
        self._http.close()

    def __del__(self) -> None:
        # A worker is dropped, not closed, when it is replaced: its kept-alive connection goes
        # with it instead of lingering until the interpreter exits.
        http: HttpClient | None = getattr(self, "_http", None)
        if http is not None:
            http.close()

    def create(
        self, model: str, messages: list[dict[str, Any]], headers: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """One non-streamed completion: the response object."""
        with self._open({"model": model, "messages": messages}, headers) as response:
            try:
                body = json.loads(response.read())
            except ValueError:
                raise ChatError("the gateway answered with something other than JSON") from None
        if not isinstance(body, dict):
            raise ChatError("the gateway answered with something other than a JSON object")
        return body

    def stream(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        headers: dict[str, str] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """A streamed completion: its chunks, the last one with the token usage."""
        request: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            request["tools"] = tools
        with self._open(request, headers) as response:
            try:
                for event in iter_sse(response.iter_lines()):
                    data = event.data.strip()
                    if data == DONE:
                        return
                    chunk = json.loads(data)
                    if not isinstance(chunk, dict):
                        continue
                    error = chunk.get("error")
                    if error is not None:
                        # The gateway reports a failure that came after the stream began.
                        message = error.get("message") if isinstance(error, dict) else error
                        raise ChatError(f"the stream failed: {message}")
                    yield chunk
            except HttpError as failed:
                raise StreamBroken(f"the reply stream broke: {failed}") from None
            except ValueError:
                raise ChatError("the gateway streamed a chunk that is not JSON") from None

    @contextmanager
    def _open(self, request: dict[str, Any], headers: dict[str, str] | None) -> Iterator[Response]:
        """A caller that may make the call again passes its own key in `headers`; otherwise
        the call gets one here, shared by the retries below."""
        response = self._send(
            json.dumps(request).encode(), {IDEMPOTENCY_HEADER: new_call_key(), **(headers or {})}
        )
        try:
            yield response
        finally:
            response.close()

    def _send(self, content: bytes, headers: dict[str, str]) -> Response:
        """The response, its status checked; retried on connection errors and busy statuses,
        except when the gateway says it already retried (`x-should-retry: false`)."""
        outage_until = time.monotonic() + OUTAGE_WAIT_S
        attempt = 0
        while True:
            last = attempt >= self.max_retries
            try:
                response = self._http.send(
                    "POST",
                    "/chat/completions",
                    content=content,
                    headers={
                        "Authorization": f"Bearer {self.api_key}",
                        "Content-Type": "application/json",
                        **headers,
                    },
                    stream=True,
                )
            except ConnectFailed as refused:
                if time.monotonic() >= outage_until:
                    raise ChatError(f"cannot reach the gateway for {OUTAGE_WAIT_S:g}s: {refused}") from None
                time.sleep(min(RETRY_DELAY_S * 2**attempt, OUTAGE_DELAY_MAX_S))
                attempt += 1
                continue
            except HttpError as failed:
                if last:
                    raise ChatError(f"cannot reach the gateway: {failed}") from None
            else:
                if response.is_success:
                    return response
                gave_up = response.headers.get(SHOULD_RETRY_HEADER, "").lower() == "false"
                if last or gave_up or response.status_code not in RETRYABLE_STATUSES:
                    text = error_text(response)
                    response.close()
                    raise ChatError(text)
                response.close()
            time.sleep(RETRY_DELAY_S * 2**attempt)
            attempt += 1

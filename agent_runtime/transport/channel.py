"""The agent's WebSocket to the orchestrator: inbox, ask and tell as frames on one connection.

An HTTP request costs each side about a millisecond of Python (routing, headers, a connection
pool); a frame on an open WebSocket costs a tenth of that. `AgentChannel.call` is safe to use
from any thread: frames carry ids, a reader thread hands each reply to the thread waiting for it.

The orchestrator sends requests of its own on the same connection (`AgentRequest`: the
workspace, memory questions from the operator); `serve` names who answers them. Workspace
updates are applied by the reader thread itself, in order; the others run on a worker thread.

The connection is opened on first use and again after it breaks; calls in flight when it breaks
fail with `OrchestratorUnavailable`, as an HTTP request would. What they were doing is safe to
repeat: the inbox hands out again what was claimed and never acknowledged, and asks and tells
carry idempotency keys. A process about to restart in place `retire`s its channel first: the
orchestrator then holds its requests for the next process's channel, and the answers this
process owes are sent before it goes.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Protocol

from pydantic import TypeAdapter
from websockets.exceptions import InvalidStatus, WebSocketException
from websockets.sync.client import ClientConnection, connect

from agent_runtime.protocol import (
    AGENT_API_PREFIX,
    DEFAULT_MAX_FRAME_BYTES,
    AgentRequest,
    ChannelAnswer,
    ChannelFrame,
    ChannelReply,
    ChannelRetiring,
    ErrorBody,
)
from agent_runtime.transport.errors import (
    OrchestratorError,
    OrchestratorRefused,
    OrchestratorStorageFull,
    OrchestratorUnavailable,
)

log = logging.getLogger(__name__)

TokenSource = Callable[[], str]
CONNECT_TIMEOUT_S = 5.0
INSUFFICIENT_STORAGE = 507
CLOSE_TIMEOUT_S = 1.0
# How long a retiring process waits for the orchestrator's reply and its own answers owed.
RETIRE_GRACE_S = 10.0
# Frames are small JSON documents; an inbox item with a large input is the biggest.
MAX_FRAME_BYTES = DEFAULT_MAX_FRAME_BYTES
CHANNEL_PATH = f"{AGENT_API_PREFIX}/channel"


_incoming: TypeAdapter[ChannelReply | AgentRequest] = TypeAdapter(ChannelReply | AgentRequest)


class RequestHandler(Protocol):
    def inline(self, request: AgentRequest) -> bool: ...

    def answer(self, request: AgentRequest) -> tuple[int, Any]: ...


def channel_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    if base.startswith("https://"):
        return "wss://" + base.removeprefix("https://") + CHANNEL_PATH
    return "ws://" + base.removeprefix("http://") + CHANNEL_PATH


class AgentChannel:
    def __init__(
        self, base_url: str, token: TokenSource, *, refresh_token: TokenSource | None = None
    ) -> None:
        """`token` gives the bearer token; `refresh_token`, when given, re-reads it after a refusal."""
        self.url = channel_url(base_url)
        self._token = token
        self._refresh_token = refresh_token
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # the connection, the pending table and sending
        self._conn: ClientConnection | None = None
        self._pending: dict[int, Future[ChannelReply]] = {}
        self._closed = False
        self.max_frame_bytes = MAX_FRAME_BYTES
        """The largest frame sent; the orchestrator's config may lower it (limits.channel_frame)."""
        self._handler: RequestHandler | None = None
        self._workers: ThreadPoolExecutor | None = None
        self._answers_owed = 0
        self._answers_sent = threading.Condition()

    def serve(self, handler: RequestHandler) -> None:
        """Answer the orchestrator's requests with `handler` from now on."""
        self._handler = handler

    def call(self, frame: ChannelFrame, timeout_s: float) -> ChannelReply:
        """Send one frame (its id is assigned here) and wait for the reply; 4xx/5xx raise."""
        future: Future[ChannelReply] = Future()
        with self._lock:
            conn = self._connected()
            frame.id = next(self._ids)
            encoded = frame.model_dump_json()
            # A character takes at most 4 bytes: most frames are known to fit without encoding them.
            if len(encoded) > self.max_frame_bytes // 4 and len(encoded.encode()) > self.max_frame_bytes:
                raise _oversized(frame, len(encoded.encode()), self.max_frame_bytes)
            self._pending[frame.id] = future
            try:
                conn.send(encoded)
                failed = None
            except (OSError, WebSocketException) as error:
                failed = error
                orphans = self._forget(conn)
        if failed is not None:
            _abandon(conn, orphans)
            raise OrchestratorUnavailable(f"channel: send failed: {failed}") from None
        try:
            reply = future.result(timeout_s)
        except FutureTimeout:
            with self._lock:
                self._pending.pop(frame.id, None)
            raise OrchestratorUnavailable(f"channel: no reply within {timeout_s:g}s") from None
        if reply.status == INSUFFICIENT_STORAGE:
            raise OrchestratorStorageFull(_error_body(reply).message)
        if reply.status >= 500:
            raise OrchestratorUnavailable(f"channel: {_describe(reply)}")
        if reply.status >= 400:
            refusal = _error_body(reply)
            raise OrchestratorRefused(reply.status, refusal.error, refusal.message)
        return reply

    def open(self) -> None:
        """Connect now rather than on the first call (the orchestrator may have requests)."""
        with self._lock:
            self._connected()

    def retire(self, grace_s: float = RETIRE_GRACE_S) -> None:
        """Before this process restarts in place: the orchestrator is told (it sends nothing
        more here once it has replied), the answers still owed are sent, then the channel closes.
        Each step waits at most what is left of `grace_s`; a restart is never held longer."""
        deadline = time.monotonic() + grace_s
        with self._lock:
            connected = self._conn is not None
        if connected:
            try:
                self.call(ChannelRetiring(), grace_s)
            except OrchestratorError as failed:
                log.info("restarting without the orchestrator's reply: %s", failed)
            with self._answers_sent:
                self._answers_sent.wait_for(
                    lambda: self._answers_owed == 0, max(deadline - time.monotonic(), 0.0)
                )
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conn = self._conn
        if conn is not None:
            conn.close()

    # --- the connection --------------------------------------------------------------------

    def _connected(self) -> ClientConnection:
        """The open connection, or a new one (called with the lock held)."""
        if self._closed:
            raise OrchestratorUnavailable("channel: closed")
        if self._conn is not None:
            return self._conn
        conn = self._open(self._token())
        self._conn = conn
        threading.Thread(target=self._read, args=(conn,), name="orchestrator-channel", daemon=True).start()
        return conn

    def _open(self, token: str) -> ClientConnection:
        for attempt in (1, 2):
            try:
                conn = connect(
                    self.url,
                    additional_headers={"Authorization": f"Bearer {token}"},
                    open_timeout=CONNECT_TIMEOUT_S,
                    compression=None,
                    proxy=None,
                    max_size=MAX_FRAME_BYTES,
                    user_agent_header="flotilla-agent",
                    close_timeout=CLOSE_TIMEOUT_S,
                )
                # The connection outlives any `with` block here: it is closed by `close` or
                # when it breaks. Entering it says so (websockets warns about bare connections).
                return conn.__enter__()
            except InvalidStatus as refused:
                status = refused.response.status_code
                if status in (401, 403) and attempt == 1 and self._refresh_token is not None:
                    # The orchestrator may have rotated the token file: one fresh read, one retry.
                    token = self._refresh_token()
                    continue
                if 400 <= status < 500:
                    raise OrchestratorRefused(
                        status, "channel_refused", "the orchestrator refused the channel"
                    ) from None
                raise OrchestratorUnavailable(f"channel: HTTP {status} on connect") from None
            except (OSError, TimeoutError, WebSocketException) as failed:
                raise OrchestratorUnavailable(f"channel: cannot connect to {self.url}: {failed}") from None
        raise AssertionError("unreachable")

    def _read(self, conn: ClientConnection) -> None:
        try:
            for message in conn:
                incoming = _incoming.validate_json(message)
                if isinstance(incoming, AgentRequest):
                    self._take_request(conn, incoming)
                    continue
                with self._lock:
                    future = self._pending.pop(incoming.id, None)
                if future is not None:
                    future.set_result(incoming)
        except (OSError, WebSocketException, ValueError) as failed:
            log.warning("channel to the orchestrator broke: %s", failed)
        finally:
            with self._lock:
                orphans = self._forget(conn)
            _abandon(conn, orphans)

    def _take_request(self, conn: ClientConnection, request: AgentRequest) -> None:
        handler = self._handler
        if handler is None:
            body = ErrorBody(error="unavailable", message="the agent is still starting").model_dump()
            self._answer(conn, request, 503, body)
        elif handler.inline(request):
            self._answer(conn, request, *handler.answer(request))
        else:
            if self._workers is None:
                self._workers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="orchestrator-request")
            with self._answers_sent:
                self._answers_owed += 1
            self._workers.submit(self._answer_later, conn, handler, request)

    def _answer_later(self, conn: ClientConnection, handler: RequestHandler, request: AgentRequest) -> None:
        try:
            self._answer(conn, request, *handler.answer(request))
        finally:
            with self._answers_sent:
                self._answers_owed -= 1
                self._answers_sent.notify_all()

    def _answer(self, conn: ClientConnection, request: AgentRequest, status: int, body: Any) -> None:
        frame = ChannelAnswer(request=request.request, status=status, body=body)
        try:
            with self._lock:
                conn.send(frame.model_dump_json())
        except (OSError, WebSocketException) as failed:
            log.warning("answer to %s not sent: %s", request.op.value, failed)

    def _forget(self, conn: ClientConnection) -> list[Future[ChannelReply]]:
        """Let go of a broken connection; returns the calls that waited on it (lock held)."""
        if self._conn is not conn:
            return []
        self._conn = None
        pending, self._pending = self._pending, {}
        return list(pending.values())


def _oversized(frame: ChannelFrame, size: int, limit: int) -> OrchestratorRefused:
    """A frame over the limit would close the channel (1009) with every call on it: refused here."""
    kind = getattr(frame, "type", "channel")
    return OrchestratorRefused(
        413,
        "too_large",
        f"a {kind} frame of {size} bytes is over the channel's limit of {limit} bytes",
    )


def _abandon(conn: ClientConnection, orphans: list[Future[ChannelReply]]) -> None:
    for future in orphans:
        if not future.done():
            future.set_exception(OrchestratorUnavailable("channel: the connection closed"))
    conn.close()


def _error_body(reply: ChannelReply) -> ErrorBody:
    try:
        return ErrorBody.model_validate(reply.body)
    except ValueError:
        return ErrorBody(error="error", message=json.dumps(reply.body)[:200])


def _describe(reply: ChannelReply) -> str:
    error = _error_body(reply)
    return f"HTTP {reply.status} {error.error}: {error.message}"

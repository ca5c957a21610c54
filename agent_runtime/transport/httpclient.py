"""HTTP/1.1 requests over the standard library's `http.client`, with connections kept alive.

The agent's plain requests (runs, events, token counts, peers, tool calls, embeddings and model
calls through the gateway) go to one or two origins and need little of a full client: a body
out, a status, headers and a body back, or a streamed body read line by line. `http.client` is
already loaded when the agent reports in (see `agent_runtime.transport.boot`); a third-party
client would add some 70 modules and 25 ms of CPU to every agent's first item.

`http.client` turns Nagle's algorithm off on each connection it opens and sends a request's
headers and body in one write, so a request on a kept-alive connection never waits for a
delayed ACK.
"""

from __future__ import annotations

import functools
import http.client
import json
import socket
import ssl
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

# A request on a kept-alive connection that the server has closed meanwhile fails before any of
# it is read: such a request is sent once more, on a new connection.
_STALE_CONNECTION = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)
_READ_SIZE = 64 * 1024
CONNECT_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_S = 30.0


def http_client(base_url: str, timeout_s: float = REQUEST_TIMEOUT_S) -> HttpClient:
    """A client for requests to `base_url`, verifying its server as `tls_context` says."""
    return HttpClient(
        base_url, timeout_s=timeout_s, connect_timeout_s=CONNECT_TIMEOUT_S, tls=tls_context(base_url)
    )


def tls_context(url: str) -> ssl.SSLContext:
    """What verifies the server of `url`: the system's trust store for https, loaded once per
    process (each load costs tens of milliseconds of CPU, and an agent has several clients); for
    plain http, which never uses it, a context that trusts nothing, so a redirect to https fails
    closed instead of going unverified."""
    if url.startswith("https:"):
        return _trust_store()
    return _TRUSTS_NOTHING


@functools.cache
def _trust_store() -> ssl.SSLContext:
    return ssl.create_default_context()


_TRUSTS_NOTHING = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class HttpError(Exception):
    """The request got no complete answer: the connection failed, timed out or broke."""


class ConnectFailed(HttpError):
    """No connection could be opened: the request was never sent."""


class Response:
    """A response: its status and headers, and its body, read whole or line by line."""

    def __init__(self, raw: http.client.HTTPResponse, release: Callable[[bool], None]) -> None:
        self._raw = raw
        self._release: Callable[[bool], None] | None = release
        self._content: bytes | None = None
        self.status_code = raw.status
        self.reason_phrase = raw.reason
        self.headers: http.client.HTTPMessage = raw.headers

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    def read(self) -> bytes:
        if self._content is None:
            try:
                self._content = self._raw.read()
            except (OSError, http.client.HTTPException) as failed:
                self._finish(reusable=False)
                raise HttpError(f"the response broke off: {failed!r}") from None
            self._finish(reusable=True)
        return self._content

    @property
    def content(self) -> bytes:
        return self.read()

    @property
    def text(self) -> str:
        return self.read().decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.read())

    def iter_lines(self) -> Iterator[str]:
        """The body's lines, without their line ends, as they arrive; HttpError when the body
        ends before its announced end (its length, or the last chunk of a chunked body).

        Read with `read1`, not `readline`: on a chunked body cut short, `http.client`'s
        `readline` ends quietly as if the body were whole."""
        pending = b""
        try:
            while piece := self._raw.read1(_READ_SIZE):
                *lines, pending = (pending + piece).split(b"\n")
                for line in lines:
                    yield _decoded(line)
            if self._raw.length:
                raise http.client.IncompleteRead(pending, self._raw.length)
        except (OSError, http.client.HTTPException) as failed:
            self._finish(reusable=False)
            raise HttpError(f"the response broke off: {failed!r}") from None
        if pending:
            yield _decoded(pending)
        self._finish(reusable=True)

    def close(self) -> None:
        """Done with the response. A body read to its end has given its connection back
        already; one left unread closes it."""
        self._finish(reusable=False)

    def _finish(self, reusable: bool) -> None:
        release, self._release = self._release, None
        if release is not None:
            release(reusable and not self._raw.will_close)


def _decoded(line: bytes) -> str:
    return line.rstrip(b"\r").decode("utf-8", errors="replace")


class HttpClient:
    """Requests to one origin (`base_url`), several threads at once, each connection reused."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float,
        connect_timeout_s: float,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._prefix = parts.path.rstrip("/")
        self._timeout_s = timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._tls = tls
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def send(
        self,
        method: str,
        path: str,
        *,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        stream: bool = False,
    ) -> Response:
        """The response, its body read whole; with `stream`, its body left to read (`read`,
        `iter_lines`) and the response to close by the caller."""
        response = self._exchange(method, self._prefix + path, content, headers, timeout_s)
        if not stream:
            try:
                response.read()
            finally:
                response.close()
        return response

    def _exchange(
        self,
        method: str,
        target: str,
        content: bytes | None,
        headers: Mapping[str, str] | None,
        timeout_s: float | None,
    ) -> Response:
        """The request sent and the response's head read, on an idle connection or a new one."""
        timeout = self._timeout_s if timeout_s is None else timeout_s
        for last_try in (False, True):
            connection, reused = self._connection(fresh=last_try)
            try:
                connection.sock.settimeout(timeout)
                connection.request(method, target, body=content, headers=dict(headers or {}))
                raw = connection.getresponse()
            except _STALE_CONNECTION as failed:
                connection.close()
                if reused and not last_try:
                    continue
                raise HttpError(f"the connection was closed: {failed}") from None
            except (OSError, http.client.HTTPException) as failed:
                connection.close()
                raise HttpError(f"{type(failed).__name__}: {failed}") from None
            return Response(raw, functools.partial(self._release, connection))
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _connection(self, fresh: bool) -> tuple[http.client.HTTPConnection, bool]:
        """An idle connection (reused), unless `fresh`, or a new one, connected."""
        with self._lock:
            if self._idle and not fresh:
                return self._idle.pop(), True
        connection: http.client.HTTPConnection
        if self._https:
            connection = http.client.HTTPSConnection(
                self._host, self._port, timeout=self._connect_timeout_s, context=self._tls
            )
        else:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=self._connect_timeout_s)
        try:
            connection.connect()
        except (OSError, http.client.HTTPException) as failed:
            connection.close()
            if isinstance(failed, socket.timeout):
                raise ConnectFailed(f"connecting to {self._host}:{self._port} timed out") from None
            raise ConnectFailed(f"cannot connect to {self._host}:{self._port}: {failed}") from None
        return connection, False

    def _release(self, connection: http.client.HTTPConnection, reusable: bool) -> None:
        if not reusable:
            connection.close()
            return
        with self._lock:
            self._idle.append(connection)

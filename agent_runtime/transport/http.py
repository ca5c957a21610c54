"""The agent's plain HTTP requests to the orchestrator (runs, events, token counts, peers).

Loaded on first use: an idle agent talks only over its channel and never imports httpx.
"""

from __future__ import annotations

import functools
import socket
import ssl
import sys
from collections.abc import Callable
from typing import TypeVar

# httpx imports its command-line entry point when click and rich are installed (they are on the
# host, for the orchestrator); an agent never uses it, and it costs ~8 MiB of RSS.
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

import httpx
from pydantic import BaseModel, ValidationError

from agent_runtime.protocol import ErrorBody
from agent_runtime.transport.errors import OrchestratorError, OrchestratorRefused, OrchestratorUnavailable

Model = TypeVar("Model", bound=BaseModel)
CONNECT_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_S = 30.0


def no_delay_transport(url: str) -> httpx.HTTPTransport:
    """A transport for requests to `url` with Nagle's algorithm off.

    httpx writes a POST's headers and body separately; with Nagle on, the body waits for the
    server's (delayed) ACK of the headers, which adds up to 40 ms to a request on loopback.
    """
    return httpx.HTTPTransport(
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)], verify=tls_context(url)
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


class AgentHttp:
    """Requests with the agent's bearer token; one fresh read of the token after a 401."""

    def __init__(self, base_url: str, token: Callable[[], str], reread_token: Callable[[], str]) -> None:
        self._token = token
        self._reread_token = reread_token
        self._http = httpx.Client(
            base_url=base_url,
            timeout=httpx.Timeout(REQUEST_TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
            transport=no_delay_transport(base_url),
        )

    def close(self) -> None:
        self._http.close()

    def send(
        self, method: str, path: str, body: BaseModel | None = None, *, timeout_s: float | None = None
    ) -> httpx.Response:
        """The response to an authorized request; `timeout_s` for one that waits longer than
        the usual request (a long-poll, a tool call)."""
        content = body.model_dump_json().encode() if body is not None else None
        timeout = httpx.Timeout(
            REQUEST_TIMEOUT_S if timeout_s is None else timeout_s, connect=CONNECT_TIMEOUT_S
        )
        token = self._token()
        for attempt in (1, 2):
            headers = {"Authorization": f"Bearer {token}"}
            if content is not None:
                headers["Content-Type"] = "application/json"
            try:
                response = self._http.request(method, path, content=content, headers=headers, timeout=timeout)
            except httpx.HTTPError as failed:
                raise OrchestratorUnavailable(
                    f"{method} {path}: {failed.__class__.__name__}: {failed}"
                ) from None
            if response.status_code == 401 and attempt == 1:
                # The orchestrator may have rotated the token file.
                token = self._reread_token()
                continue
            break
        if response.status_code >= 500:
            raise OrchestratorUnavailable(f"{method} {path}: HTTP {response.status_code}")
        if response.status_code >= 400:
            raise _refused(response)
        return response

    def call(
        self,
        method: str,
        path: str,
        body: BaseModel | None,
        answer: type[Model],
        *,
        timeout_s: float | None = None,
    ) -> Model:
        response = self.send(method, path, body, timeout_s=timeout_s)
        try:
            return answer.model_validate_json(response.content)
        except ValidationError as bad:
            raise OrchestratorError(f"{method} {path}: unexpected reply: {bad}") from None


def _refused(response: httpx.Response) -> OrchestratorRefused:
    try:
        error = ErrorBody.model_validate_json(response.content)
        return OrchestratorRefused(response.status_code, error.error, error.message)
    except ValidationError:
        pass
    try:
        # The /v1/ routes answer in OpenAI's shape: {"error": {"message", "type", "param", "code"}}.
        nested = _OpenAIErrorBody.model_validate_json(response.content).error
        return OrchestratorRefused(response.status_code, nested.code or nested.type, nested.message)
    except ValidationError:
        return OrchestratorRefused(response.status_code, "error", response.text[:200])


class _OpenAIError(BaseModel):
    message: str
    type: str = "error"
    code: str | None = None


class _OpenAIErrorBody(BaseModel):
    error: _OpenAIError

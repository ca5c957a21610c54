"""The agent's HTTP client for the orchestrator's agent routes (see `agent_runtime.protocol`).

Part of the idle path: it imports only the standard library, httpx, websockets and the wire
models. The hot calls (the inbox long-poll, acknowledgements, progress) go over the channel
(`agent_runtime.channel`); the rest are plain HTTP requests.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import TypeVar

# httpx imports its command-line entry point when click and rich are installed (they are on the
# host, for the orchestrator); an agent never uses it, and it costs ~8 MiB of RSS.
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

import httpx
from pydantic import BaseModel, ValidationError

from agent_runtime.channel import AgentChannel
from agent_runtime.errors import OrchestratorError, OrchestratorRefused, OrchestratorUnavailable
from agent_runtime.protocol import (
    AGENT_API_PREFIX,
    AgentEvent,
    AgentRuntimeConfig,
    ChannelDone,
    ChannelNext,
    ChannelProgress,
    CheckIn,
    CheckInReply,
    ErrorBody,
    InboxItem,
    RunRecord,
    TokenCountRequest,
    TokenCountResult,
    WorkResult,
)
from agent_runtime.settings import read_token

Model = TypeVar("Model", bound=BaseModel)
CONNECT_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_S = 30.0
LONG_POLL_MARGIN_S = 15.0


def no_delay_transport() -> httpx.HTTPTransport:
    """A transport with Nagle's algorithm off.

    httpx writes a POST's headers and body separately; with Nagle on, the body waits for the
    server's (delayed) ACK of the headers, which adds up to 40 ms to a request on loopback.
    """
    return httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])


class OrchestratorClient:
    """Calls the agent routes with the agent's bearer token, re-read from disk on a 401."""

    def __init__(self, base_url: str, token_file: Path) -> None:
        self.base_url = base_url.rstrip("/")
        self.token_file = token_file
        self._token = read_token(token_file)
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=httpx.Timeout(REQUEST_TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
            transport=no_delay_transport(),
        )
        self.channel = AgentChannel(self.base_url, lambda: self._token, refresh_token=self._reread_token)

    @property
    def token(self) -> str:
        return self._token

    def close(self) -> None:
        self.channel.close()
        self._http.close()

    def _reread_token(self) -> str:
        self._token = read_token(self.token_file)
        return self._token

    def _send(
        self, method: str, path: str, *, body: BaseModel | None = None, **kwargs: object
    ) -> httpx.Response:
        content = body.model_dump_json().encode() if body is not None else None
        for attempt in (1, 2):
            headers = {"Authorization": f"Bearer {self._token}"}
            if content is not None:
                headers["Content-Type"] = "application/json"
            try:
                response = self._http.request(method, path, content=content, headers=headers, **kwargs)  # type: ignore[arg-type]
            except httpx.HTTPError as failed:
                raise OrchestratorUnavailable(
                    f"{method} {path}: {failed.__class__.__name__}: {failed}"
                ) from None
            if response.status_code == 401 and attempt == 1:
                # The orchestrator may have rotated the token file; one fresh read, one retry.
                self._reread_token()
                continue
            break
        if response.status_code >= 500:
            raise OrchestratorUnavailable(f"{method} {path}: HTTP {response.status_code}")
        if response.status_code >= 400:
            raise _refused(response)
        return response

    def _parse(self, response: httpx.Response, model: type[Model]) -> Model:
        try:
            return model.model_validate_json(response.content)
        except ValidationError as bad:
            raise OrchestratorError(
                f"{response.request.method} {response.request.url.path}: unexpected reply: {bad}"
            ) from None

    def get_config(self) -> AgentRuntimeConfig:
        return self._parse(self._send("GET", f"{AGENT_API_PREFIX}/config"), AgentRuntimeConfig)

    def checkin(self, body: CheckIn) -> CheckInReply:
        return self._parse(self._send("POST", f"{AGENT_API_PREFIX}/checkin", body=body), CheckInReply)

    def next_item(self, wait_s: float) -> InboxItem | None:
        reply = self.channel.call(ChannelNext(wait_s=wait_s), wait_s + LONG_POLL_MARGIN_S)
        return None if reply.status == 204 else _validate(reply.body, InboxItem)

    def progress(self, item_id: str, delta: str) -> None:
        self.channel.call(ChannelProgress(item_id=item_id, delta=delta), REQUEST_TIMEOUT_S)

    def done(self, item_id: str, result: WorkResult) -> None:
        self.channel.call(ChannelDone(item_id=item_id, result=result), REQUEST_TIMEOUT_S)

    def record_run(self, run: RunRecord) -> None:
        self._send("POST", f"{AGENT_API_PREFIX}/runs", body=run)

    def event(self, event: AgentEvent) -> None:
        self._send("POST", f"{AGENT_API_PREFIX}/events", body=event)

    def count_tokens(self, model: str, texts: list[str]) -> TokenCountResult:
        request = TokenCountRequest(model=model, texts=texts)
        return self._parse(self._send("POST", "/v1/tokens/count", body=request), TokenCountResult)


def _validate(body: object, model: type[Model]) -> Model:
    try:
        return model.model_validate(body)
    except ValidationError as bad:
        raise OrchestratorError(f"channel: unexpected reply: {bad}") from None


def _refused(response: httpx.Response) -> OrchestratorRefused:
    try:
        error = ErrorBody.model_validate_json(response.content)
        return OrchestratorRefused(response.status_code, error.error, error.message)
    except ValidationError:
        return OrchestratorRefused(response.status_code, "error", response.text[:200])

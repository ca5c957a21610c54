"""The agent's plain HTTP requests to the orchestrator (runs, events, token counts, peers).

Over `agent_runtime.transport.httpclient` (the standard library's `http.client`, kept alive).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from agent_runtime.protocol import ErrorBody
from agent_runtime.transport.errors import OrchestratorError, OrchestratorRefused, OrchestratorUnavailable
from agent_runtime.transport.httpclient import HttpClient, HttpError, Response, http_client

Model = TypeVar("Model", bound=BaseModel)


class AgentHttp:
    """Requests with the agent's bearer token; one fresh read of the token after a 401."""

    def __init__(
        self,
        base_url: str,
        token: Callable[[], str],
        reread_token: Callable[[], str],
        http: HttpClient | None = None,
    ) -> None:
        """`http`: the connections to share, when the caller holds some to `base_url` already."""
        self._token = token
        self._reread_token = reread_token
        self._http = http or http_client(base_url)

    def close(self) -> None:
        self._http.close()

    def send(
        self, method: str, path: str, body: BaseModel | None = None, *, timeout_s: float | None = None
    ) -> Response:
        """The response to an authorized request; `timeout_s` for one that waits longer than
        the usual request (a long-poll, a tool call)."""
        content = body.model_dump_json().encode() if body is not None else None
        token = self._token()
        for attempt in (1, 2):
            headers = {"Authorization": f"Bearer {token}"}
            if content is not None:
                headers["Content-Type"] = "application/json"
            try:
                response = self._http.send(
                    method, path, content=content, headers=headers, timeout_s=timeout_s
                )
            except HttpError as failed:
                raise OrchestratorUnavailable(f"{method} {path}: {failed}") from None
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


def _refused(response: Response) -> OrchestratorRefused:
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

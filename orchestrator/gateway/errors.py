"""What the gateway answers when a call cannot be served: a status, an OpenAI error body, headers.

Everything under `/v1/` speaks OpenAI's error format, `{"error": {"message", "type", "param",
"code"}}`, so that OpenAI SDKs show the reason (`error.message`) and raise the matching
exception class. Flotilla's own code is in `error.code`, extra facts in `error.details`.

OpenAI SDKs retry 408, 409, 429 and 5xx answers unless the answer says `x-should-retry: false`.
The gateway has already retried the provider (and tried the fallback) before it answers 5xx,
and a budget refusal cannot succeed before its window resets: those answers say so, so that one
failing call never becomes attempts x client retries upstream requests.
"""

from __future__ import annotations

import math
from datetime import datetime

from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from orchestrator.gateway.budget import BudgetExhausted
from orchestrator.gateway.providers.base import UpstreamError
from orchestrator.gateway.providers.embedding_share import EmbeddingCpuExhausted
from orchestrator.gateway.providers.openai_compat import MissingKeyError

GATEWAY_PREFIX = "/v1/"
NO_RETRY = {"x-should-retry": "false"}

# OpenAI's `error.type` for each status the gateway answers with.
_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    405: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


class OpenAIError(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None
    details: list[str] = Field(default_factory=list)


class OpenAIErrorBody(BaseModel):
    """The body of every error answered under /v1/."""

    error: OpenAIError


def is_gateway_path(path: str) -> bool:
    return path.startswith(GATEWAY_PREFIX)


def error_type(status: int) -> str:
    if status >= 500:
        return "server_error"
    return _TYPES.get(status, "invalid_request_error")


def openai_error_response(
    status: int,
    code: str,
    message: str,
    *,
    param: str | None = None,
    details: list[str] | None = None,
    headers: dict[str, str] | None = None,
    type_: str | None = None,
) -> JSONResponse:
    body = OpenAIErrorBody(
        error=OpenAIError(
            message=message, type=type_ or error_type(status), param=param, code=code, details=details or []
        )
    )
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


class GatewayError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: list[str] | None = None,
        headers: dict[str, str] | None = None,
        *,
        param: str | None = None,
        type_: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details or []
        self.param = param
        self.type = type_ or error_type(status)
        self.headers = headers or {}

    def response(self) -> JSONResponse:
        return openai_error_response(
            self.status,
            self.code,
            self.message,
            param=self.param,
            details=self.details,
            headers=self.headers,
            type_=self.type,
        )


def budget_error(exc: BudgetExhausted, now: datetime) -> GatewayError:
    window = exc.window
    wait_s = max(math.ceil((window.resets_at - now).total_seconds()), 1)
    details = [
        f"scope: {window.scope}",
        f"budget: {window.kind}",
        f"spent: {window.spent:g}",
        f"limit: {window.limit:g}",
        f"needed: {exc.needed:g}",
        f"resets_at: {window.resets_at.strftime('%Y-%m-%dT%H:%M:%SZ')}",
    ]
    return GatewayError(
        429,
        "budget_exhausted",
        str(exc),
        details,
        {"retry-after": str(wait_s)} | NO_RETRY,
        type_="insufficient_quota",
    )


def embedding_cpu_error(exc: EmbeddingCpuExhausted) -> GatewayError:
    """An agent past its share of a local embedding model's thread: it may ask again once its
    use of the last minute is under the cap."""
    details = [f"spent_s: {exc.spent_s:.2f}", f"cap_s: {exc.cap_s:g}", "window_s: 60"]
    headers = {"retry-after": str(math.ceil(exc.retry_after_s))} | NO_RETRY
    return GatewayError(429, "embedding_cpu_exhausted", str(exc), details, headers)


def unsupported_parameter(param: str, message: str) -> GatewayError:
    return GatewayError(400, "unsupported_parameter", message, param=param)


def upstream_error(exc: UpstreamError, model: str) -> GatewayError:
    """The agent-facing form of a provider failure that retries and fallback did not cure."""
    message = f"model '{model}': {exc.message}"
    if isinstance(exc, MissingKeyError):
        return GatewayError(503, "provider_key_missing", message, headers=dict(NO_RETRY))
    status = exc.status
    if status == 429:
        headers = {"retry-after": str(math.ceil(exc.retry_after_s))} if exc.retry_after_s else {}
        return GatewayError(503, "upstream_rate_limited", message, headers=headers | NO_RETRY)
    if status in (401, 403):
        return GatewayError(
            502,
            "upstream_auth",
            message + " (check the provider key on the orchestrator host)",
            headers=dict(NO_RETRY),
        )
    if status is not None and 400 <= status < 500:
        return GatewayError(status, "upstream_rejected", message, headers=dict(NO_RETRY))
    return GatewayError(502, "upstream_error", message, headers=dict(NO_RETRY))

"""What the gateway answers when a call cannot be served: a status, a JSON ErrorBody, headers.

Budget refusals are the only 429s; they carry `x-should-retry: false` so that OpenAI SDKs do
not retry a call that cannot succeed before the window resets.
"""

from __future__ import annotations

import math
from datetime import datetime

from fastapi.responses import JSONResponse

from agent_runtime.protocol import ErrorBody
from orchestrator.gateway.budget import BudgetExhausted
from orchestrator.gateway.providers.base import UpstreamError
from orchestrator.gateway.providers.openai_compat import MissingKeyError


class GatewayError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: list[str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = ErrorBody(error=code, message=message, details=details or [])
        self.headers = headers or {}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body.model_dump(), status_code=self.status, headers=self.headers)


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
        429, "budget_exhausted", str(exc), details, {"retry-after": str(wait_s), "x-should-retry": "false"}
    )


def upstream_error(exc: UpstreamError, model: str) -> GatewayError:
    """The agent-facing form of a provider failure that retries and fallback did not cure."""
    message = f"model '{model}': {exc.message}"
    if isinstance(exc, MissingKeyError):
        return GatewayError(503, "provider_key_missing", message, headers={"x-should-retry": "false"})
    status = exc.status
    if status == 429:
        headers = {"retry-after": str(math.ceil(exc.retry_after_s))} if exc.retry_after_s else {}
        return GatewayError(503, "upstream_rate_limited", message, headers=headers)
    if status in (401, 403):
        return GatewayError(
            502, "upstream_auth", message + " (check the provider key on the orchestrator host)"
        )
    if status is not None and 400 <= status < 500:
        return GatewayError(status, "upstream_rejected", message)
    return GatewayError(502, "upstream_error", message)

"""Every error leaves the API as a JSON ErrorBody: {"error": code, "message": text, "details": [...]},
except under /v1/ (the OpenAI-compatible gateway), where it takes OpenAI's shape
(`orchestrator.gateway.errors`) and an invalid request is a 400, as OpenAI answers it."""

from __future__ import annotations

import math

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from agent_runtime.protocol import ErrorBody
from orchestrator import errors
from orchestrator.gateway.errors import is_gateway_path, openai_error_response

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    413: "too_large",
    422: "invalid_request",
    429: "rate_limited",
    502: "upstream_error",
    503: "unavailable",
    504: "timeout",
}


# The HTTP status of each kind of refusal the domain raises (`orchestrator.errors`).
STATUS_OF_REFUSAL: dict[type[errors.Refused], int] = {
    errors.BadRequest: 400,
    errors.Forbidden: 403,
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.Gone: 410,
    errors.TooLarge: 413,
    errors.Invalid: 422,
    errors.Failed: 500,
    errors.BadAnswer: 502,
    errors.Unavailable: 503,
    errors.RateLimited: 429,
}


class ApiError(Exception):
    """Raise from a route to answer with a specific status, code and message."""

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

    @classmethod
    def of(cls, refused: errors.Refused) -> ApiError:
        """The answer to a refusal of the domain: its kind's status, its code, message and details."""
        if isinstance(refused, errors.AgentRefused):
            status = refused.status
        else:
            status = next(
                (code for kind, code in STATUS_OF_REFUSAL.items() if isinstance(refused, kind)), 400
            )
        headers = {}
        if isinstance(refused, errors.RateLimited):
            headers["Retry-After"] = str(max(1, math.ceil(refused.retry_after_s)))
        return cls(status, refused.code, refused.message, refused.details, headers)


def _respond(status: int, body: ErrorBody, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(status_code=status, content=body.model_dump(), headers=headers or None)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(errors.Refused)
    async def _refused(request: Request, exc: errors.Refused) -> JSONResponse:
        return await _api_error(request, ApiError.of(exc))

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        if is_gateway_path(request.url.path):
            return openai_error_response(
                exc.status, exc.body.error, exc.body.message, details=exc.body.details
            )
        return _respond(exc.status, exc.body, exc.headers)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
        code = _CODES.get(exc.status_code, "error")
        message = _http_message(request, exc)
        if is_gateway_path(request.url.path):
            headers = dict(exc.headers) if exc.headers else None
            return openai_error_response(exc.status_code, code, message, headers=headers)
        return _respond(exc.status_code, ErrorBody(error=code, message=message))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        unreadable = [e for e in exc.errors() if e.get("type") == "json_invalid"]
        if unreadable:
            # Its location is a byte offset, not a field: no param to name.
            reason = unreadable[0].get("ctx", {}).get("error", "")
            details = [
                f"the body is not valid JSON: {reason} (at character {_location(unreadable[0]['loc'])})"
            ]
            if is_gateway_path(request.url.path):
                return openai_error_response(400, "invalid_request", details[0], details=details)
            return _respond(422, ErrorBody(error="invalid_request", message=details[0], details=details))
        problems = [(_location(e["loc"]), e["msg"]) for e in exc.errors()]
        details = [f"{where}: {what}" for where, what in problems]
        if is_gateway_path(request.url.path):
            param = problems[0][0] if problems else None
            message = "invalid request: " + "; ".join(details) if details else "invalid request body"
            return openai_error_response(400, "invalid_request", message, param=param, details=details)
        return _respond(
            422, ErrorBody(error="invalid_request", message="invalid request body", details=details)
        )


def _location(loc: tuple[object, ...] | list[object]) -> str:
    """'body.messages.0.role' -> 'messages.0.role': where in the body, as a client names it."""
    parts = [str(part) for part in loc]
    if parts and parts[0] == "body":
        parts = parts[1:]
    return ".".join(parts) or "body"


def _http_message(request: Request, exc: HTTPException) -> str:
    if exc.status_code == 404 and exc.detail == "Not Found":
        return f"no route {request.method} {request.url.path}"
    if exc.status_code == 405:
        return f"{request.method} is not allowed on {request.url.path}"
    return str(exc.detail)

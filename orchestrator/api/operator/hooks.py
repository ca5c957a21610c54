"""`POST /hooks/NAME`: a signed request from outside the fleet (fleet.yaml `hooks:`).

No bearer token: the sender proves itself with the hook's signature (orchestrator.hooks). Served
on the operator's address only, like the rest of the operator surface; put a reverse proxy in
front of it to take requests from the internet.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from agent_runtime.protocol import ErrorBody
from orchestrator.api.deps import ServicesDep
from orchestrator.hooks import HookAccepted, HookRefused, HookRequest

router = APIRouter(tags=["hooks"])


@router.post(
    "/hooks/{hook}",
    status_code=202,
    response_model=HookAccepted,
    responses={
        401: {"model": ErrorBody, "description": "missing, wrong or stale signature"},
        409: {"model": ErrorBody, "description": "a replay of a request accepted before"},
        413: {"model": ErrorBody, "description": "over the hook's max_payload"},
        429: {"model": ErrorBody, "description": "over the hook's max_per_minute (see Retry-After)"},
    },
)
async def receive_hook(hook: str, request: Request, services: ServicesDep) -> HookAccepted | JSONResponse:
    """Turn a verified request into an inbox item for the hook's agent: 202 with the item's id."""
    body = await request.body()
    incoming = HookRequest(
        hook=hook,
        headers={name.lower(): value for name, value in request.headers.items()},
        body=body,
        remote=request.client.host if request.client else "",
    )
    try:
        return services.hooks.receive(incoming)
    except HookRefused as refused:
        headers = {"retry-after": str(refused.retry_after_s)} if refused.retry_after_s else None
        error = ErrorBody(error=refused.code, message=refused.message, details=refused.details)
        return JSONResponse(error.model_dump(), status_code=refused.status, headers=headers)

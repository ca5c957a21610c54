"""`GET /api/v1/traces/{id}`: the path of a request across agents, with timings.

The id may be any unique prefix of a message id, of an inbox item id, or of an operator
message's id (as `flotilla inbox` and `flotilla send` show them). Operator token only.
404 when nothing matches, 409 (listing the candidates) when the prefix is not unique.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter

from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.broker import AmbiguousId, RequestTrace, RequestTracer, TraceNotFound

router = APIRouter(tags=["broker"])


@router.get("/api/v1/traces/{reference}")
async def request_trace(reference: str, _: OperatorDep, services: ServicesDep) -> RequestTrace:
    """The request's steps (operator message, asks, tells), each with who, what, state,
    when it was queued, claimed and finished, and the turn that worked it."""
    tracer = RequestTracer(services.db)
    try:
        return await asyncio.to_thread(tracer.trace, reference)
    except TraceNotFound as missing:
        raise ApiError(404, "not_found", str(missing)) from None
    except AmbiguousId as ambiguous:
        raise ApiError(409, "ambiguous_id", str(ambiguous), ambiguous.candidates) from None

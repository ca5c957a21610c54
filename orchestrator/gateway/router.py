"""HTTP routes of the LLM gateway.

Agents (bearer = their own token):
    POST /v1/chat/completions    OpenAI-compatible, `stream: true` answered as SSE
    POST /v1/embeddings          OpenAI-compatible
    POST /v1/tokens/count        TokenCountRequest -> TokenCountResult
Operator:
    GET  /api/v1/costs           CostsReport: spend per agent today and this month, budgets
    GET  /api/v1/usage           UsageSeries: calls, tokens and dollars per time bucket
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, FastAPI, Query
from fastapi.responses import JSONResponse, Response, StreamingResponse

from agent_runtime.protocol import TokenCountRequest, TokenCountResult
from orchestrator.api.deps import AgentDep, OperatorDep, ServicesDep
from orchestrator.gateway.errors import GatewayError
from orchestrator.gateway.models import ChatCompletionRequest, CostsReport, EmbeddingRequest, UsageSeries
from orchestrator.gateway.service import Gateway
from orchestrator.services import Services

MODEL_HEADER = "x-flotilla-model"


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    yield
    services: Services | None = getattr(app.state, "services", None)
    gateway: Gateway | None = getattr(services, "gateway", None)
    if gateway is not None:
        await gateway.aclose()


router = APIRouter(lifespan=_lifespan)


def _gateway(services: Services) -> Gateway:
    gateway: Gateway | None = getattr(services, "gateway", None)
    if gateway is None:
        raise GatewayError(503, "unavailable", "the LLM gateway is not running in this orchestrator")
    return gateway


@router.post("/v1/chat/completions", response_model=None)
async def chat_completions(body: ChatCompletionRequest, agent: AgentDep, services: ServicesDep) -> Response:
    try:
        gateway = _gateway(services)
        if body.stream:
            route, events = await gateway.open_stream(agent.name, body)
            headers = {"cache-control": "no-cache", "x-accel-buffering": "no", MODEL_HEADER: route.model}
            return StreamingResponse(events, media_type="text/event-stream", headers=headers)
        route, completion = await gateway.chat(agent.name, body)
    except GatewayError as exc:
        return exc.response()
    return JSONResponse(completion.wire(), headers={MODEL_HEADER: route.model})


@router.post("/v1/embeddings", response_model=None)
async def embeddings(body: EmbeddingRequest, agent: AgentDep, services: ServicesDep) -> Response:
    try:
        route, result = await _gateway(services).embeddings(agent.name, body)
    except GatewayError as exc:
        return exc.response()
    return JSONResponse(result.wire(), headers={MODEL_HEADER: route.model})


@router.post("/v1/tokens/count", response_model=None)
async def count_tokens(
    body: TokenCountRequest, _: AgentDep, services: ServicesDep
) -> TokenCountResult | Response:
    try:
        return _gateway(services).count_tokens(body)
    except GatewayError as exc:
        return exc.response()


@router.get("/api/v1/costs", response_model=None)
async def costs(_: OperatorDep, services: ServicesDep) -> CostsReport | Response:
    try:
        return _gateway(services).costs()
    except GatewayError as exc:
        return exc.response()


@router.get("/api/v1/usage", response_model=None)
async def usage(
    _: OperatorDep,
    services: ServicesDep,
    agent: Annotated[str | None, Query(description="Only this agent")] = None,
    since: Annotated[datetime | None, Query(description="ISO 8601 start; default 24 hours ago")] = None,
    bucket: Annotated[Literal["hour", "day"], Query(description="Width of a time bucket")] = "hour",
) -> UsageSeries | Response:
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    try:
        return _gateway(services).usage(since, bucket, agent or None)
    except GatewayError as exc:
        return exc.response()

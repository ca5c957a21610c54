"""The LLM gateway's OpenAI-compatible routes, for agents (bearer = their own token):
    POST /v1/chat/completions    OpenAI-compatible, `stream: true` answered as SSE
    POST /v1/embeddings          OpenAI-compatible
    GET  /v1/models              OpenAI-compatible: the models this agent may call
    GET  /v1/models/{model}      one of them (404 for any other)
    POST /v1/tokens/count        TokenCountRequest -> TokenCountResult

The operator's view of spending is in orchestrator.api.operator.costs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from agent_runtime.protocol import IDEMPOTENCY_HEADER, RUN_HEADER, TokenCountRequest, TokenCountResult
from orchestrator.api.deps import AgentDep, ServicesDep
from orchestrator.gateway.errors import GatewayError
from orchestrator.gateway.models import (
    ChatCompletionRequest,
    EmbeddingRequest,
    ModelCard,
    ModelList,
)
from orchestrator.gateway.service import Gateway
from orchestrator.gateway.settled_answers import usable_key
from orchestrator.services import Services

MODEL_HEADER = "x-flotilla-model"
RUN_ID_MAX = 64


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    yield
    services: Services = app.state.services
    await services.gateway.aclose()


router = APIRouter(lifespan=_lifespan)


def _gateway(services: Services) -> Gateway:
    return services.gateway


def _run_id(request: Request) -> str | None:
    """The run an agent tags its call with; anything unusable is ignored (the call is not refused)."""
    value = request.headers.get(RUN_HEADER, "").strip()
    return value if 0 < len(value) <= RUN_ID_MAX and value.isprintable() else None


@router.post("/v1/chat/completions", response_model=None)
async def chat_completions(
    body: ChatCompletionRequest, request: Request, agent: AgentDep, services: ServicesDep
) -> Response:
    stream_headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}
    try:
        gateway = _gateway(services)
        run_id = _run_id(request)
        key = usable_key(request.headers.get(IDEMPOTENCY_HEADER))
        replay = await gateway.replay(agent.name, key, body) if key else None
        if replay is not None:
            if body.stream:
                return StreamingResponse(
                    iter(replay.events(body)),
                    media_type="text/event-stream",
                    headers={**stream_headers, MODEL_HEADER: replay.model},
                )
            return JSONResponse(replay.completion.wire(), headers={MODEL_HEADER: replay.model})
        if body.stream:
            route, events = await gateway.open_stream(agent.name, body, run_id=run_id, key=key)
            headers = {**stream_headers, MODEL_HEADER: route.model}
            return StreamingResponse(events, media_type="text/event-stream", headers=headers)
        route, completion = await gateway.chat(agent.name, body, run_id=run_id, key=key)
    except GatewayError as exc:
        return exc.response()
    return JSONResponse(completion.wire(), headers={MODEL_HEADER: route.model})


@router.post("/v1/embeddings", response_model=None)
async def embeddings(
    body: EmbeddingRequest, request: Request, agent: AgentDep, services: ServicesDep
) -> Response:
    try:
        route, result = await _gateway(services).embeddings(agent.name, body, run_id=_run_id(request))
    except GatewayError as exc:
        return exc.response()
    return JSONResponse(result.wire(), headers={MODEL_HEADER: route.model})


@router.get("/v1/models", response_model=None)
async def list_models(agent: AgentDep, services: ServicesDep) -> ModelList | Response:
    try:
        return _gateway(services).models(agent.name)
    except GatewayError as exc:
        return exc.response()


@router.get("/v1/models/{model:path}", response_model=None)
async def get_model(model: str, agent: AgentDep, services: ServicesDep) -> ModelCard | Response:
    try:
        return _gateway(services).model(agent.name, model)
    except GatewayError as exc:
        return exc.response()


@router.post("/v1/tokens/count", response_model=None)
async def count_tokens(
    body: TokenCountRequest, _: AgentDep, services: ServicesDep
) -> TokenCountResult | Response:
    try:
        return _gateway(services).count_tokens(body)
    except GatewayError as exc:
        return exc.response()

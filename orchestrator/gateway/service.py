"""The LLM gateway: routes an agent's call to its model, enforces allowlist and budgets,
retries and falls back, and writes every call to the usage ledger.

The scheduler watches the budgets' stops (`watch_stops`); the HTTP routes call `chat`,
`open_stream`, `embeddings` and `count_tokens`; the operator routes read `costs` and `usage`.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Literal, TypeVar

import anyio

from agent_runtime.memory import BLENDED_EMBEDDING_MODEL, LOCAL_EMBEDDING_MODEL, MULTILINGUAL_EMBEDDING_MODEL
from agent_runtime.protocol import TokenCountRequest, TokenCountResult, utcnow
from orchestrator.config.fleet import LoadedFleet
from orchestrator.config.models import BUILT_IN_MODELS, TEST_MODEL, FleetConfig
from orchestrator.events import EventBus, EventType
from orchestrator.fleet.view import FleetView
from orchestrator.gateway.budget import (
    BudgetExhausted,
    Budgets,
    Clock,
    Reservation,
    StopWatcher,
    day_window,
    month_window,
)
from orchestrator.gateway.cooldown import Cooldowns
from orchestrator.gateway.embedding import TEST_EMBEDDING_DIMENSIONS
from orchestrator.gateway.errors import (
    GatewayError,
    budget_error,
    embedding_cpu_error,
    unsupported_parameter,
    upstream_error,
)
from orchestrator.gateway.ledger import PAID_BY, WORKED_FOR, CallKind, CallStatus, Charge, Ledger
from orchestrator.gateway.models import (
    AgentCosts,
    BudgetStatus,
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    CostsReport,
    EmbeddingRequest,
    EmbeddingResponse,
    ModelCard,
    ModelList,
    SpendFigures,
    StreamOptions,
    Usage,
    UsageSeries,
)
from orchestrator.gateway.prices import price_of
from orchestrator.gateway.providers.base import Provider, UpstreamError
from orchestrator.gateway.providers.blended_embedding import blended_provider
from orchestrator.gateway.providers.embedding_share import EmbeddingCpuExhausted
from orchestrator.gateway.providers.local_embedding import LocalEmbeddingProvider
from orchestrator.gateway.providers.multilingual_embedding import multilingual_provider
from orchestrator.gateway.providers.openai_compat import OpenAICompatProvider
from orchestrator.gateway.providers.test import TestModelProvider
from orchestrator.gateway.retry import RetryPolicy
from orchestrator.gateway.settled_answers import RecordAnswer, SettledAnswers, request_digest
from orchestrator.gateway.streaming import DONE_EVENT, StreamTracker, error_event, replayed_events
from orchestrator.gateway.tokens import TokenCounter, token_counter
from orchestrator.lifecycle import Controls
from orchestrator.state.db import Database

log = logging.getLogger(__name__)

# Reserved for a reply when the request sets no max_tokens; settled to the real figure after.
DEFAULT_OUTPUT_ESTIMATE = 256
# How long a call made again waits for the same call still in flight (a stream that was never
# read is never settled; the copy then goes ahead as a new call).
IN_FLIGHT_WAIT_S = 120.0
T = TypeVar("T")


@dataclass(frozen=True)
class Route:
    """A fleet model resolved to the provider that serves it and the provider's model name."""

    model: str
    provider: Provider
    upstream_model: str


@dataclass(frozen=True)
class CallContext:
    """A call admitted by the budget: its reservation, and when it started (for latency)."""

    agent: str
    reservation: Reservation
    started: float
    record: RecordAnswer | None = None  # keeps the answer by the agent's idempotency key


@dataclass(frozen=True)
class Replay:
    """A call made again with a settled idempotency key: the answer it had, charged once."""

    model: str
    completion: ChatCompletion

    def events(self, request: ChatCompletionRequest) -> list[bytes]:
        wants_usage = bool(request.stream_options and request.stream_options.include_usage)
        return replayed_events(self.completion, wants_usage)


class Gateway:
    def __init__(
        self,
        db: Database,
        fleet: FleetView,
        controls: Controls,
        events: EventBus,
        *,
        clock: Clock = utcnow,
        retry: RetryPolicy | None = None,
        counter: TokenCounter | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._db = db
        self._fleet = fleet
        self._controls = controls
        self._clock = clock
        self._retry = retry or RetryPolicy()
        self._sleep = sleep
        self.counter = counter or token_counter()
        self.ledger = Ledger(db)
        self.ledger.recover()
        self._events = events
        self.budgets = Budgets(db, self.ledger, events, lambda: self._config, clock)
        fleet.watch(self._applied)
        self.settled = SettledAnswers(db)
        self.cooldowns = Cooldowns(clock)
        self._in_flight: dict[tuple[str, str], asyncio.Event] = {}
        self._test = TestModelProvider(self.counter)
        self._local_embedding = LocalEmbeddingProvider(
            self.counter, cpu_seconds_per_minute=self._embedding_cpu_cap
        )
        self._multilingual_embedding = multilingual_provider(self.counter, self._embedding_cpu_cap)
        self._blended_embedding = blended_provider(self.counter, self._embedding_cpu_cap)
        self._upstreams: dict[str, OpenAICompatProvider] = {}
        self._retired: list[OpenAICompatProvider] = []
        self.payer_of: Callable[[str], str | None] = lambda agent: None
        """The peer paying for what an agent works on now (who asks pays), or None: its own."""

    def _applied(self, _fleet: LoadedFleet) -> None:
        self.budgets.caps_changed()

    @property
    def _config(self) -> FleetConfig:
        return self._fleet.current().config

    def _embedding_cpu_cap(self) -> float:
        return self._config.llm.embedding.cpu_seconds_per_minute

    # ------------------------------------------------------------------ scheduler

    def budget_status(self, agent: str) -> BudgetStatus:
        return self.budgets.status(agent)

    def can_spend(self, agent: str) -> bool:
        return self.budgets.can_spend(agent)

    def watch_stops(self, use: StopWatcher) -> None:
        self.budgets.watch_stops(use)

    # ------------------------------------------------------------------ routing

    def _allowed(self, agent: str, *, embedding: bool = False) -> list[str]:
        config = self._config
        if agent not in config.agents:
            # As once its token is revoked with its unit: one answer for a removed agent, whenever.
            raise GatewayError(
                401,
                "unauthorized",
                f"the token is of agent '{agent}', no longer part of fleet '{config.fleet}'",
            )
        allowed = config.allowed_models(agent)
        embedding_model = config.embedding_model()
        if embedding and embedding_model:
            allowed = list(dict.fromkeys([*allowed, embedding_model]))
        return allowed

    def _allowed_before(self, agent: str, model: str) -> bool:
        """A turn that started before an apply may finish with the models the agent's previous
        config allowed (see `FleetView.previous`)."""
        previous = self._fleet.previous()
        if previous is None or agent not in previous.config.agents:
            return False
        return model in previous.config.allowed_models(agent)

    def models(self, agent: str) -> ModelList:
        """The models `agent` may call (chat, and the fleet's embedding model), for GET /v1/models."""
        return ModelList(data=[self._card(name) for name in self._allowed(agent, embedding=True)])

    def model(self, agent: str, model: str) -> ModelCard:
        if model not in self._allowed(agent, embedding=True):
            raise GatewayError(
                404,
                "model_not_found",
                f"model '{model}' does not exist or agent '{agent}' may not use it",
                param="model",
            )
        return self._card(model)

    @staticmethod
    def _card(model: str) -> ModelCard:
        owner = "flotilla" if model in BUILT_IN_MODELS else model.partition(":")[0]
        return ModelCard(id=model, owned_by=owner)

    def _route(self, agent: str, model: str, *, embedding: bool = False) -> Route:
        hold = self._controls.hold_of(agent)
        if hold is not None:
            raise GatewayError(
                423,
                "agent_held",
                f"agent '{agent}' is {hold} by the operator: no model calls until it is resumed",
            )
        allowed = self._allowed(agent, embedding=embedding)
        if model not in allowed and not self._allowed_before(agent, model):
            self._check_exists(model)  # a model that does not exist is a 404, as OpenAI answers it
            raise GatewayError(
                403,
                "model_not_allowed",
                f"agent '{agent}' may not use model '{model}'; allowed: {', '.join(allowed)}",
                details=[f"allowed: {name}" for name in allowed],
                param="model",
            )
        return self._resolve(model)

    def _check_exists(self, model: str) -> None:
        name, _, upstream_model = model.partition(":")
        if model not in BUILT_IN_MODELS and (name not in self._config.llm.providers or not upstream_model):
            raise GatewayError(
                404,
                "model_not_found",
                f"model '{model}' does not exist: fleet.yaml declares no provider for it "
                "(models are named PROVIDER:MODEL, or are built in: "
                f"{', '.join(sorted(BUILT_IN_MODELS))})",
                param="model",
            )

    def _resolve(self, model: str) -> Route:
        if model == TEST_MODEL:
            return Route(model, self._test, TEST_MODEL)
        if model == LOCAL_EMBEDDING_MODEL:
            return Route(model, self._local_embedding, LOCAL_EMBEDDING_MODEL)
        if model == MULTILINGUAL_EMBEDDING_MODEL:
            return Route(model, self._multilingual_embedding, MULTILINGUAL_EMBEDDING_MODEL)
        if model == BLENDED_EMBEDDING_MODEL:
            return Route(model, self._blended_embedding, BLENDED_EMBEDDING_MODEL)
        self._check_exists(model)
        name, _, upstream_model = model.partition(":")
        config = self._config.llm.providers[name]
        provider = self._upstreams.get(name)
        if provider is None or provider.config != config:
            if provider is not None:
                self._retired.append(provider)
            provider = self._upstreams[name] = OpenAICompatProvider(name, config)
        return Route(model, provider, upstream_model)

    def _chat_routes(self, agent: str, primary: Route, request: ChatCompletionRequest) -> list[Route]:
        """The model called, then the agent's fallback chain, without the models cooling down (see
        `Cooldowns.order`) and without those whose provider would not take the request's extra
        fields."""
        chain = [(primary.model, primary)]
        for model in self._config.fallback_of(agent):
            if model in (m for m, _ in chain):
                continue
            try:
                route = self._resolve(model)
            except GatewayError:
                continue
            if all(self._passes_extra(route, field) for field in request.extra_fields):
                chain.append((model, route))
        return [route for _, route in self.cooldowns.order(chain)]

    def _passes_extra(self, route: Route, field: str) -> bool:
        if route.model in BUILT_IN_MODELS:
            return False
        return self._config.llm.providers[route.model.partition(":")[0]].passes_extra(field)

    def _check_extras(self, route: Route, request: ChatCompletionRequest) -> None:
        """A field OpenAI does not define reaches a provider only when fleet.yaml lets it through."""
        for field in request.extra_fields:
            if self._passes_extra(route, field):
                continue
            if route.model in BUILT_IN_MODELS:
                why = f"model '{route.model}' is built in and takes only OpenAI's own fields"
            else:
                provider = route.model.partition(":")[0]
                why = (
                    f"provider '{provider}' takes no field '{field}': add it to "
                    f"llm.providers.{provider}.extra_body in fleet.yaml to pass it through"
                )
            raise unsupported_parameter(field, f"unknown field '{field}': {why}")

    # ------------------------------------------------------------------ charging

    def _reserve(
        self,
        agent: str,
        kind: CallKind,
        route: Route,
        tokens_in: int,
        tokens_out: int,
        run_id: str | None = None,
    ) -> CallContext:
        price = price_of(route.model, self._config.llm)
        estimate = Charge(tokens_in, tokens_out, price.cost(tokens_in, tokens_out))
        try:
            reservation = self.budgets.reserve(
                agent,
                kind=kind,
                model=route.model,
                provider=route.provider.name,
                estimate=estimate,
                run_id=run_id,
                payer=self.payer_of(agent),
            )
        except BudgetExhausted as exc:
            raise budget_error(exc, self._clock()) from None
        return CallContext(agent, reservation, time.monotonic())

    def _settle(
        self,
        ctx: CallContext,
        route: Route,
        *,
        usage: Usage | None = None,
        written: str = "",
        status: CallStatus,
        error: str | None = None,
        answer: Callable[[Usage], ChatCompletion] | None = None,
    ) -> None:
        """`answer` builds the completion kept for the call's idempotency key, if it has one."""
        estimated = usage is None
        if usage is None:
            usage = self._counted_usage(ctx, written, counts_prompt=status != "error")
        price = price_of(route.model, self._config.llm)
        tokens_in, tokens_out, cached = usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens
        charge = Charge(tokens_in, tokens_out, price.cost(tokens_in, tokens_out, cached), cached)
        latency_ms = int((time.monotonic() - ctx.started) * 1000)
        also: Callable[[sqlite3.Connection], None] | None = None
        if ctx.record is not None and answer is not None and status == "ok":
            kept = answer(usage)
            also = partial(
                ctx.record, usage_id=ctx.reservation.row_id, route_model=route.model, completion=kept
            )
        self.ledger.settle(
            ctx.reservation.row_id,
            model=route.model,
            provider=route.provider.name,
            charge=charge,
            status=status,
            latency_ms=latency_ms,
            estimated=estimated,
            error=error,
            also=also,
        )
        self.budgets.after_settle(ctx.reservation.agent)
        self._done(ctx)

    def _counted_usage(self, ctx: CallContext, written: str, *, counts_prompt: bool = True) -> Usage:
        """Usage counted by the gateway (cl100k) for a provider that reported none."""
        tokens_in = ctx.reservation.estimate.tokens_in if counts_prompt else 0
        tokens_out = self.counter.count(written)
        return Usage(
            prompt_tokens=tokens_in, completion_tokens=tokens_out, total_tokens=tokens_in + tokens_out
        )

    def _prompt_tokens(self, request: ChatCompletionRequest) -> int:
        return self.counter.count_chat(request.counted_messages, request.tools)

    # ------------------------------------------------------------------ calling

    async def _call(self, routes: list[Route], attempt: Callable[[Route], Awaitable[T]]) -> tuple[Route, T]:
        """Try each route in turn, retrying retryable failures with backoff; first success wins.
        A model that fails after its retries cools down (see `Cooldowns`)."""
        failure: tuple[Route, UpstreamError] | None = None
        for route in routes:
            for number in range(1, self._retry.attempts + 1):
                try:
                    result = await attempt(route)
                except UpstreamError as exc:
                    failure = (route, exc)
                    if not exc.retryable:
                        raise upstream_error(exc, route.model) from None
                    delay = self._retry.delay_after(number, exc)
                    if delay is None:
                        self._cool_down(route, exc)
                        break
                    log.warning("model %s failed (%s); retry in %.2fs", route.model, exc.message, delay)
                    await self._sleep(delay)
                else:
                    self.cooldowns.succeeded(route.model)
                    return route, result
        assert failure is not None  # routes is never empty
        raise upstream_error(failure[1], failure[0].model)

    def _cool_down(self, route: Route, exc: UpstreamError) -> None:
        started = self.cooldowns.failed(route.model, exc.message)
        if started is None:
            log.warning("model %s failed (%s); it is already cooling down", route.model, exc.message)
            return
        log.warning(
            "model %s failed (%s); skipped by fallback chains for %.0fs",
            route.model,
            exc.message,
            started.seconds_left,
        )
        self._events.publish(EventType.MODEL_COOLING, None, **started.model_dump(mode="json"))

    def _reserve_chat(
        self, agent: str, request: ChatCompletionRequest, run_id: str | None, key: str | None
    ) -> tuple[Route, CallContext]:
        _check_supported(request)
        primary = self._route(agent, request.model)
        self._check_extras(primary, request)
        info = self._config.llm.models.get(primary.model)
        configured = info.max_output_tokens if info is not None else None
        estimate_out = request.output_limit or configured or DEFAULT_OUTPUT_ESTIMATE
        tokens_in = self._prompt_tokens(request)
        ctx = self._reserve(agent, "chat", primary, tokens_in, estimate_out, run_id)
        if key is None:
            return primary, ctx
        self._in_flight[(agent, key)] = asyncio.Event()
        record = self.settled.recorder(agent, key, request_digest(request), self._clock())
        return primary, CallContext(ctx.agent, ctx.reservation, ctx.started, record)

    def _done(self, ctx: CallContext) -> None:
        """A keyed call is settled: a copy of it waiting for its outcome may look now."""
        if ctx.record is not None:
            waiting = self._in_flight.pop((ctx.agent, ctx.record.key), None)
            if waiting is not None:
                waiting.set()

    async def replay(self, agent: str, key: str, request: ChatCompletionRequest) -> Replay | None:
        """The settled answer of an earlier call with this key, or None when there is none (the
        call is then made). A call with this key still in flight is waited for first."""
        in_flight = self._in_flight.get((agent, key))
        if in_flight is not None:
            try:
                await asyncio.wait_for(in_flight.wait(), IN_FLIGHT_WAIT_S)
            except TimeoutError:
                log.warning("model call of %s with key %s is still in flight; making it again", agent, key)
        found = self.settled.find(agent, key, self._clock())
        if found is None:
            return None
        if found.request_sha256 != request_digest(request):
            raise GatewayError(
                422,
                "idempotency_key_reused",
                f"idempotency key '{key}' was used by agent '{agent}' for another request; "
                "send a new key for a new call",
                param="Idempotency-Key",
            )
        log.info("model call of %s with settled key %s answered from its record", agent, key)
        return Replay(found.route_model, found.completion)

    @contextmanager
    def _settled_on_failure(self, ctx: CallContext, route: Route) -> Iterator[None]:
        """A call that fails before it has a result is settled here, as an error or interrupted."""
        try:
            yield
        except GatewayError as exc:
            self._settle(ctx, route, status="error", error=exc.message)
            raise
        except BaseException:
            self._settle(ctx, route, status="interrupted")
            raise

    def _for(self, route: Route, request: ChatCompletionRequest) -> ChatCompletionRequest:
        """The request as the provider gets it: its own model name, and the model's default
        output limit from fleet.yaml when the request sets none (a small local model may
        otherwise write until its window is full)."""
        update: dict[str, object] = {"model": route.upstream_model}
        if request.output_limit is None and route.provider.name != TEST_MODEL:
            info = self._config.llm.models.get(route.model)
            if info is not None and info.max_output_tokens is not None:
                update["max_tokens"] = info.max_output_tokens
        return request.model_copy(update=update)

    async def chat(
        self,
        agent: str,
        request: ChatCompletionRequest,
        *,
        run_id: str | None = None,
        key: str | None = None,
    ) -> tuple[Route, ChatCompletion]:
        """A non-streamed completion; returns the route that served it (the fallback, maybe).
        With an idempotency `key`, the answer is kept for a call made again (see `replay`)."""
        primary, ctx = self._reserve_chat(agent, request, run_id, key)
        with self._settled_on_failure(ctx, primary):
            route, completion = await self._call(
                self._chat_routes(agent, primary, request),
                lambda r: r.provider.complete(self._for(r, request)),
            )
        written = "".join(c.message.content or "" for c in completion.choices)

        def answer(usage: Usage) -> ChatCompletion:
            return (
                completion if completion.usage is not None else completion.model_copy(update={"usage": usage})
            )

        self._settle(ctx, route, usage=completion.usage, written=written, status="ok", answer=answer)
        return route, completion

    async def open_stream(
        self,
        agent: str,
        request: ChatCompletionRequest,
        *,
        run_id: str | None = None,
        key: str | None = None,
    ) -> tuple[Route, AsyncGenerator[bytes, None]]:
        """Start a streamed completion. Errors before the first chunk raise GatewayError (a plain
        HTTP error); later ones end the stream with an error event."""
        primary, ctx = self._reserve_chat(agent, request, run_id, key)
        wants_usage = bool(request.stream_options and request.stream_options.include_usage)
        # Usage is always requested upstream, for the ledger; the agent gets it only if it asked.
        upstream_request = request.model_copy(update={"stream_options": StreamOptions(include_usage=True)})

        async def first_chunk(
            route: Route,
        ) -> tuple[AsyncIterator[ChatCompletionChunk], ChatCompletionChunk | None]:
            chunks = route.provider.stream(self._for(route, upstream_request))
            try:
                return chunks, await anext(chunks, None)
            except BaseException:
                await _close(chunks)
                raise

        with self._settled_on_failure(ctx, primary):
            route, (chunks, first) = await self._call(self._chat_routes(agent, primary, request), first_chunk)
        return route, self._relay(ctx, route, chunks, first, wants_usage)

    async def _relay(
        self,
        ctx: CallContext,
        route: Route,
        chunks: AsyncIterator[ChatCompletionChunk],
        chunk: ChatCompletionChunk | None,
        wants_usage: bool,
    ) -> AsyncGenerator[bytes, None]:
        tracker = StreamTracker()
        settled = False

        def settle(status: CallStatus, error: str | None = None) -> None:
            nonlocal settled
            settled = True
            self._settle(
                ctx,
                route,
                usage=tracker.usage,
                written=tracker.written,
                status=status,
                error=error,
                answer=tracker.completion,
            )

        # The ledger is settled before the last event leaves, so that an agent that has read the
        # whole stream finds its call already accounted for.
        try:
            try:
                while chunk is not None:
                    tracker.see(chunk)
                    if wants_usage or not tracker.usage_only(chunk):
                        yield chunk.sse()
                    chunk = await anext(chunks, None)
            except UpstreamError as exc:
                settle("error", exc.message)
                yield error_event("upstream_error", f"model '{route.model}': {exc.message}")
                return
            settle("ok")
            if wants_usage and tracker.usage is None and tracker.last is not None:
                # The provider streamed no usage: the agent gets the gateway's own count, as settled.
                yield tracker.last.usage_chunk(self._counted_usage(ctx, tracker.written)).sse()
            yield DONE_EVENT
        finally:
            if not settled:
                settle("interrupted")
            await _close(chunks)

    async def embeddings(
        self, agent: str, request: EmbeddingRequest, *, run_id: str | None = None
    ) -> tuple[Route, EmbeddingResponse]:
        route = self._route(agent, request.model, embedding=True)
        if route.model == TEST_MODEL and request.dimensions is None:
            dimensions = self._config.llm.embedding.dimensions or TEST_EMBEDDING_DIMENSIONS
            request = request.model_copy(update={"dimensions": dimensions})
        tokens_in = sum(self.counter.count_many(request.texts))
        ctx = self._reserve(agent, "embeddings", route, tokens_in, 0, run_id)
        with self._settled_on_failure(ctx, route):
            # Never a fallback model: its vectors would live in another space.
            try:
                _, response = await self._call(
                    [route],
                    lambda r: r.provider.embed_for(
                        agent, request.model_copy(update={"model": r.upstream_model})
                    ),
                )
            except EmbeddingCpuExhausted as refused:
                raise embedding_cpu_error(refused) from None
        self._settle(ctx, route, usage=response.usage, status="ok")
        return route, response

    def count_tokens(self, request: TokenCountRequest) -> TokenCountResult:
        counts = self.counter.count_many(request.texts)
        return TokenCountResult(counts=counts, tokenizer=self.counter.tokenizer)

    # ------------------------------------------------------------------ operator reports

    def _figures(self, agent: str | None, now: datetime) -> SpendFigures:
        today = Ledger.spend(self._db, agent, *day_window(now))
        month = Ledger.spend(self._db, agent, *month_window(now))
        return SpendFigures(
            today_usd=today.usd,
            month_usd=month.usd,
            today_tokens=today.tokens,
            month_tokens=month.tokens,
            calls_today=today.calls,
            calls_month=month.calls,
        )

    def spent_today(self) -> dict[str, float]:
        """Dollars each agent spent today (UTC), in one query: what the fleet view shows."""
        return Ledger.usd_by_agent(self._db, *day_window(self._clock()))

    def costs(self) -> CostsReport:
        now = self._clock()
        config = self._config
        names = sorted(set(config.agents) | set(self.ledger.agents()))
        agents = []
        for name in names:
            figures = self._figures(name, now)
            status = self.budgets.status(name)
            own = [w for w in status.windows if w.scope == "agent"]
            today = day_window(now)
            agents.append(
                AgentCosts(
                    agent=name,
                    can_spend=status.can_spend,
                    budget=own,
                    paid_for_peers_today_usd=Ledger.spend_of(self._db, (PAID_BY + name,), *today).usd,
                    worked_for_peers_today_usd=Ledger.spend_of(self._db, (WORKED_FOR + name,), *today).usd,
                    **figures.model_dump(),
                )
            )
        return CostsReport(
            at=now, agents=agents, fleet=self._figures(None, now), fleet_budget=self.budgets.fleet_windows()
        )

    def usage(
        self, since: datetime | None = None, bucket: Literal["hour", "day"] = "hour", agent: str | None = None
    ) -> UsageSeries:
        start = since or self._clock() - timedelta(hours=24)
        return UsageSeries(
            bucket=bucket, since=start, agent=agent, buckets=self.ledger.series(start, bucket, agent)
        )

    async def aclose(self) -> None:
        for provider in [*self._upstreams.values(), *self._retired]:
            await provider.aclose()
        self._upstreams.clear()
        self._retired.clear()
        await self._local_embedding.aclose()
        await self._multilingual_embedding.aclose()
        await self._blended_embedding.aclose()


def _check_supported(request: ChatCompletionRequest) -> None:
    """Refuse, rather than silently ignore, what the gateway cannot honour."""
    if request.n is not None and request.n > 1:
        raise unsupported_parameter(
            "n",
            f"n={request.n} is not supported: the gateway returns one choice per request "
            "(send separate requests for several answers)",
        )


async def _close(chunks: AsyncIterator[ChatCompletionChunk]) -> None:
    """Close a provider stream even from a cancelled task (its connection must be released)."""
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        with anyio.CancelScope(shield=True):
            await aclose()

"""Helpers shared by the broker tests: serve one inbox item, ask and wait, read deliveries."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agent_runtime.protocol import AskRequest, AskResult, InboxItem, WorkResult
from orchestrator.services import Services

Responder = Callable[[InboxItem], WorkResult]
SUMMARIZE_INPUT = {"text": "hello world"}


async def serve_one(services: Services, agent: str, respond: Responder, wait_s: float = 5.0) -> InboxItem:
    item = await services.inbox.next(agent, wait_s)
    assert item is not None, f"{agent} received nothing"
    services.inbox.complete(agent, item.id, respond(item))
    return item


def summary_of(item: InboxItem) -> WorkResult:
    assert item.input is not None
    return WorkResult(output={"summary": item.input["text"][:5]})


def ask(services: Services, sender: str, serve: Responder | None = None, **request: Any) -> AskResult:
    async def scenario() -> AskResult:
        call = services.broker.ask(sender, AskRequest(**request))
        if serve is None:
            return await call
        result, _ = await asyncio.gather(call, serve_one(services, request["to"], serve))
        return result

    return asyncio.run(scenario())


def delivered(services: Services, agent: str) -> list[InboxItem]:
    return services.inbox.list(agent, include_done=True)

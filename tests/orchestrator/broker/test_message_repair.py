"""Asks whose waiter died with a killed orchestrator are closed from their item's outcome."""

from __future__ import annotations

import asyncio

from broker_helpers import SUMMARIZE_INPUT

from agent_runtime.protocol import AskRequest, WorkResult
from orchestrator.broker import MessageState, repair_messages
from orchestrator.services import Services


def orphan_ask(services: Services) -> str:
    """An ask delivered to beta whose waiting coroutine is gone, as after a SIGKILL."""

    async def scenario() -> str:
        task = asyncio.create_task(
            services.broker.ask("alpha", AskRequest(to="beta", operation="summarize", input=SUMMARIZE_INPUT))
        )
        item = await services.inbox.next("beta", 5.0)
        assert item is not None
        task.cancel()
        return item.id

    return asyncio.run(scenario())


def state_of(services: Services, item_id: str) -> MessageState:
    record = services.broker.messages.get(item_id)
    assert record is not None
    return record.state


def test_an_ask_answered_after_its_waiter_died_is_closed_as_answered(services: Services) -> None:
    answered, failed, open_item = orphan_ask(services), orphan_ask(services), orphan_ask(services)
    assert {state_of(services, i) for i in (answered, failed, open_item)} == {MessageState.PENDING}
    services.inbox.complete("beta", answered, WorkResult(output={"summary": "hello"}))
    services.inbox.complete("beta", failed, WorkResult(ok=False, error="the model call failed"))

    assert repair_messages(services.broker.messages) == 2

    assert state_of(services, answered) is MessageState.ANSWERED
    record = services.broker.messages.get(failed)
    assert record is not None and record.state is MessageState.FAILED
    assert record.error_code == "failed" and "failed" in (record.error_message or "")
    assert record.finished_at is not None
    assert state_of(services, open_item) is MessageState.PENDING  # still being worked on
    assert repair_messages(services.broker.messages) == 0

"""The durable queue alone: what `put` stores, the order and conditions of claims, dead-lettering
of items handed out too often, and finishing an item."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from inbox_parts import queue_parts
from pydantic import ValidationError

from agent_runtime.protocol import ItemKind, WorkResult
from orchestrator.broker.items import NewItem
from orchestrator.events import EventType


def _new(agent: str = "beta", text: str = "hello", **fields: object) -> NewItem:
    return NewItem.model_validate(
        {"agent": agent, "kind": ItemKind.OPERATOR_MESSAGE, "sender": "operator", "text": text, **fields}
    )


def test_a_put_item_is_stored_announced_and_claimed_by_priority(tmp_path: Path) -> None:
    parts = queue_parts(tmp_path)
    low = parts.queue.put(_new(text="later", priority=0))
    high = parts.queue.put(_new(text="first", priority=10))
    assert [item.id for _, item in parts.arrived] == [low.id, high.id]
    assert parts.views.counts("beta").queued == 2

    claimed = parts.queue.claim("beta")
    assert claimed is not None and claimed.id == high.id and claimed.attempt == 1
    assert parts.views.state(high.id) == "claimed"
    second = parts.queue.claim("beta")
    assert second is not None and second.id == low.id
    assert parts.queue.claim("beta") is None


def test_an_idempotency_key_returns_the_first_item(tmp_path: Path) -> None:
    parts = queue_parts(tmp_path)
    first = parts.queue.put(_new(idempotency_key="k1"))
    again = parts.queue.put(_new(text="other text", idempotency_key="k1"))
    assert again.id == first.id and again.text == "hello"
    assert parts.views.pending("beta") == 1
    assert len(parts.arrived) == 1


def test_peoples_items_are_masked_before_they_are_stored(tmp_path: Path) -> None:
    parts = queue_parts(tmp_path)
    parts.queue.mask = lambda text: text.replace("s3cret", "[masked]")
    item = parts.queue.put(_new(text="key s3cret", input={"nested": ["s3cret"]}))
    assert item.text == "key [masked]" and item.input == {"nested": ["[masked]"]}
    peer = parts.queue.put(NewItem(agent="beta", kind=ItemKind.PEER_TELL, sender="alpha", text="peer s3cret"))
    assert peer.text == "peer s3cret"
    assert peer.principal == "agent:alpha"


def test_a_held_agent_claims_nothing(tmp_path: Path) -> None:
    parts = queue_parts(tmp_path)
    parts.queue.put(_new())
    parts.controls.set("beta", "paused")
    assert parts.queue.claim("beta") is None
    parts.controls.set("beta", None)
    assert parts.queue.claim("beta") is not None


def test_an_expired_item_is_never_handed_out(tmp_path: Path) -> None:
    parts = queue_parts(tmp_path)
    item = parts.queue.put(_new(ttl_s=0.001))
    threading.Event().wait(0.01)
    assert parts.queue.claim("beta") is None
    assert parts.views.state(item.id) == "expired"


def test_an_item_handed_out_too_often_becomes_a_dead_letter(tmp_path: Path) -> None:
    parts = queue_parts(tmp_path, "limits:\n  delivery_attempts: 2\n")
    parts.queue.dead_letter_cause = lambda agent: f"{agent}'s disk is full"
    item = parts.queue.put(_new())
    for _ in range(2):
        assert parts.queue.claim("beta") is not None
        assert parts.queue.requeue_claimed("beta") == 1
    assert parts.queue.claim("beta") is None
    assert parts.views.state(item.id) == "dead"
    [(finished_id, result)] = parts.finished
    assert finished_id == item.id and not result.ok
    assert (
        result.error is not None
        and "delivery_attempts = 2" in result.error
        and "disk is full" in result.error
    )
    [event] = parts.events.recent(types=[EventType.MESSAGE_DEAD_LETTERED.value])
    assert event.data["item_id"] == item.id and event.data["attempts"] == 2


def test_complete_finishes_only_the_owners_item(tmp_path: Path) -> None:
    parts = queue_parts(tmp_path)
    item = parts.queue.put(_new())
    assert parts.queue.claim("beta") is not None
    assert parts.queue.complete("alpha", item.id, WorkResult(text="not mine")) is False
    assert parts.views.state(item.id) == "claimed"
    assert parts.queue.complete("beta", item.id, WorkResult(text="done")) is True
    assert parts.views.result(item.id) == WorkResult(text="done")
    assert parts.finished == [(item.id, WorkResult(text="done"))]
    # A second acknowledgement of the same item is accepted and changes nothing.
    assert parts.queue.complete("beta", item.id, WorkResult(text="again")) is True
    assert len(parts.finished) == 1


def test_release_hands_an_item_out_again_without_counting_the_attempt(tmp_path: Path) -> None:
    parts = queue_parts(tmp_path)
    item = parts.queue.put(_new())
    assert parts.queue.claim("beta") is not None
    parts.queue.release(item.id)
    again = parts.queue.claim("beta")
    assert again is not None and again.attempt == 1


def test_a_long_poll_wakes_when_an_item_arrives_from_another_thread(tmp_path: Path) -> None:
    parts = queue_parts(tmp_path)

    async def scenario() -> str | None:
        parts.serving.loop = asyncio.get_running_loop()
        waiting = asyncio.create_task(parts.queue.next("beta", wait_s=5.0))
        await asyncio.sleep(0.05)
        put = threading.Thread(target=parts.queue.put, args=(_new(text="late"),))
        put.start()
        item = await waiting
        put.join()
        return item.text if item else None

    assert asyncio.run(scenario()) == "late"


def test_a_new_item_names_what_is_wrong_with_it() -> None:
    with pytest.raises(ValidationError, match="agent"):
        NewItem(agent="", kind=ItemKind.HOOK, sender="hook:x")
    with pytest.raises(ValidationError, match="hop"):
        NewItem(agent="beta", kind=ItemKind.HOOK, sender="hook:x", hop=-1)

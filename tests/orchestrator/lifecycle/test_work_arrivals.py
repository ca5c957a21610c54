"""An item put in an inbox reaches the lifecycle as 'work arrived for agent X', and every policy
that answers arrivals hears it, in the order they registered."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_runtime.protocol import InboxItem, ItemKind
from orchestrator.lifecycle import WorkArrivals, WorkArrived


def _item(kind: ItemKind, sender: str) -> InboxItem:
    return InboxItem(id="i-1", kind=kind, created_at=datetime.now(UTC), sender=sender, text="hello")


def test_an_inbox_item_is_told_as_work_arrived_for_its_agent() -> None:
    heard: list[tuple[str, WorkArrived]] = []
    arrivals = WorkArrivals()
    arrivals.answer_with(lambda work: heard.append(("admission", work)))
    arrivals.answer_with(lambda work: heard.append(("second", work)))
    arrivals.from_inbox("scout", _item(ItemKind.OPERATOR_MESSAGE, "operator"))
    work = WorkArrived(agent="scout", sender="operator", kind=ItemKind.OPERATOR_MESSAGE)
    assert heard == [("admission", work), ("second", work)]
    assert work.reason == "operator_message from operator"


def test_an_arrival_before_a_policy_answers_is_not_replayed_to_it() -> None:
    arrivals = WorkArrivals()
    arrivals.from_inbox("scout", _item(ItemKind.PEER_TELL, "other"))
    heard: list[WorkArrived] = []
    arrivals.answer_with(heard.append)
    assert heard == []


def test_a_policy_does_not_hear_the_items_it_sends_itself() -> None:
    arrivals = WorkArrivals()
    heard: list[WorkArrived] = []
    everything: list[WorkArrived] = []
    arrivals.answer_with(heard.append, except_from="scheduler")
    arrivals.answer_with(everything.append)
    arrivals.from_inbox("scout", _item(ItemKind.HEARTBEAT, "scheduler"))
    arrivals.from_inbox("scout", _item(ItemKind.PEER_TELL, "other"))
    assert [work.sender for work in heard] == ["other"]
    assert [work.sender for work in everything] == ["scheduler", "other"]

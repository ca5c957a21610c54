"""Ask through the broker: ACLs, contracts both ways, timeouts, expiry, events and the message log."""

from __future__ import annotations

import asyncio

from broker_helpers import ask, delivered, summary_of

from agent_runtime.protocol import AskRequest, AskResult, InboxItem, ItemKind, WorkResult
from orchestrator.broker import MessageState
from orchestrator.services import Services


def event_types(services: Services) -> list[str]:
    return [event.type for event in services.events.recent(100)]


def test_ask_round_trip_returns_the_validated_output(services: Services) -> None:
    result = ask(
        services, "alpha", summary_of, to="beta", operation="summarize", input={"text": "hello world"}
    )

    assert result.ok, result.error
    assert result.output == {"summary": "hello"}
    [item] = delivered(services, "beta")
    assert item.kind is ItemKind.PEER_ASK
    assert item.sender == "alpha"
    assert item.operation == "summarize"
    assert item.correlation_id == result.message_id
    assert item.trace == ["alpha"]
    assert item.hop == 1
    record = services.broker.messages.get(result.message_id)
    assert record is not None
    assert record.state is MessageState.ANSWERED
    assert record.finished_at is not None
    assert record.item_state == "done"
    assert event_types(services)[-2:] == ["message.sent", "message.delivered"]


def test_acl_denies_an_agent_outside_talks_to_and_delivers_nothing(services: Services) -> None:
    result = ask(services, "loner", to="beta", operation="summarize", input={"text": "hi"})

    assert not result.ok
    assert result.error is not None
    assert result.error.code == "acl_denied"
    assert "talks_to" in result.error.message
    assert delivered(services, "beta") == []
    record = services.broker.messages.get(result.message_id)
    assert record is not None
    assert record.state is MessageState.REFUSED
    assert record.error_code == "acl_denied"
    assert event_types(services)[-1] == "message.failed"


def test_acl_is_one_way(services: Services) -> None:
    # delta talks to echo, echo does not talk to delta.
    result = ask(services, "echo", to="delta", operation="relay", input={})
    assert result.error is not None and result.error.code == "acl_denied"


def test_operator_may_ask_anyone(services: Services) -> None:
    result = ask(
        services, "operator", summary_of, to="beta", operation="summarize", input={"text": "abcdefg"}
    )
    assert result.ok
    assert result.output == {"summary": "abcde"}


def test_unknown_agent_and_unknown_operation(services: Services) -> None:
    missing = ask(services, "alpha", to="nobody", operation="summarize", input={})
    assert missing.error is not None and missing.error.code == "unknown_agent"

    wrong_op = ask(services, "alpha", to="beta", operation="translate", input={})
    assert wrong_op.error is not None
    assert wrong_op.error.code == "unknown_operation"
    assert "summarize" in wrong_op.error.message
    assert delivered(services, "beta") == []


def test_invalid_input_is_refused_with_details_and_never_delivered(services: Services) -> None:
    result = ask(services, "alpha", to="beta", operation="summarize", input={"text": "", "extra": 1})

    assert not result.ok
    assert result.error is not None
    assert result.error.code == "invalid_input"
    joined = " ".join(result.error.details)
    assert "text" in joined and "extra" in joined
    assert delivered(services, "beta") == []
    assert services.inbox.pending("beta") == 0


def test_invalid_output_returns_a_structured_error_to_the_caller(services: Services) -> None:
    result = ask(
        services,
        "alpha",
        lambda _: WorkResult(output={"summery": 3}),
        to="beta",
        operation="summarize",
        input={"text": "hello"},
    )

    assert not result.ok
    assert result.output is None
    assert result.error is not None
    assert result.error.code == "invalid_output"
    assert any("summary" in detail for detail in result.error.details)
    record = services.broker.messages.get(result.message_id)
    assert record is not None and record.error_code == "invalid_output"


def test_a_plain_text_answer_is_read_as_a_text_object(services: Services) -> None:
    # relay's output schema is a bare object: a text-only answer satisfies it.
    result = ask(
        services, "alpha", lambda _: WorkResult(text="done"), to="gamma", operation="relay", input={}
    )
    assert result.ok
    assert result.output == {"text": "done"}


def test_a_failed_answer_reaches_the_caller(services: Services) -> None:
    result = ask(
        services,
        "alpha",
        lambda _: WorkResult(ok=False, error="disk full"),
        to="beta",
        operation="summarize",
        input={"text": "x"},
    )
    assert result.error is not None
    assert result.error.code == "failed"
    assert "disk full" in result.error.message


def test_timeout_when_the_callee_claims_but_never_answers(services: Services) -> None:
    async def scenario() -> tuple[AskResult, InboxItem | None]:
        call = services.broker.ask(
            "alpha", AskRequest(to="beta", operation="summarize", input={"text": "x"}, timeout_s=0.3)
        )
        return await asyncio.gather(call, services.inbox.next("beta", 2.0))

    result, claimed = asyncio.run(scenario())

    assert claimed is not None
    assert result.error is not None
    assert result.error.code == "timeout"
    # The callee may still finish; its item stays claimed for it.
    assert services.inbox.state(claimed.id) == "claimed"


def test_an_ask_nobody_picks_up_expires_and_is_never_handed_out(services: Services) -> None:
    result = ask(services, "alpha", to="beta", operation="summarize", input={"text": "x"}, timeout_s=0.2)

    assert result.error is not None
    assert result.error.code == "expired"
    assert asyncio.run(services.inbox.next("beta", 0)) is None
    [item] = delivered(services, "beta")
    assert services.inbox.state(item.id) in ("failed", "expired")


def test_ttl_expiry_drops_a_stale_item_before_delivery(services: Services) -> None:
    async def scenario() -> InboxItem | None:
        services.inbox.submit("beta", ItemKind.PEER_ASK, "alpha", operation="summarize", ttl_s=0.05)
        await asyncio.sleep(0.1)
        return await services.inbox.next("beta", 0)

    assert asyncio.run(scenario()) is None
    [item] = delivered(services, "beta")
    assert services.inbox.state(item.id) == "expired"


def test_idempotency_key_runs_the_operation_once(services: Services) -> None:
    calls: list[str] = []

    def count(item: InboxItem) -> WorkResult:
        calls.append(item.id)
        return summary_of(item)

    first = ask(
        services,
        "alpha",
        count,
        to="beta",
        operation="summarize",
        input={"text": "hello"},
        idempotency_key="k1",
    )
    second = ask(
        services, "alpha", to="beta", operation="summarize", input={"text": "hello"}, idempotency_key="k1"
    )

    assert first.ok and second.ok
    assert second.message_id == first.message_id
    assert second.output == first.output
    assert len(calls) == 1
    assert len(delivered(services, "beta")) == 1


def test_idempotency_keys_belong_to_their_sender(services: Services) -> None:
    ask(
        services,
        "alpha",
        summary_of,
        to="beta",
        operation="summarize",
        input={"text": "aaaaaa"},
        idempotency_key="k",
    )
    other = ask(
        services,
        "operator",
        summary_of,
        to="beta",
        operation="summarize",
        input={"text": "bbbbbb"},
        idempotency_key="k",
    )
    assert other.output == {"summary": "bbbbb"}
    assert len(delivered(services, "beta")) == 2


def test_peers_lists_talks_to_with_operations(services: Services) -> None:
    peers = {peer.name: peer for peer in services.broker.peers("alpha")}

    assert sorted(peers) == ["beta", "gamma"]
    assert [op.name for op in peers["beta"].operations] == ["summarize"]
    assert peers["beta"].role == "summarizer"
    assert "I summarize texts." in peers["beta"].interface_text
    assert services.broker.peers("loner") == []

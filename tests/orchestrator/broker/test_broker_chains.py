"""Chains of messages: hop limit, cycles, tells, priorities, redelivery, traces, contracts in force."""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker_helpers import SUMMARIZE_INPUT, ask, delivered, summary_of

from agent_runtime.protocol import AskRequest, AskResult, InboxItem, ItemKind, TellRequest, WorkResult
from agent_runtime.work.dedupe import ProcessedLog
from orchestrator.broker import Broker
from orchestrator.services import Services


async def relay_chain(services: Services, hops: list[str]) -> list[AskResult]:
    """hops[0] asks hops[1], which, while working on it, asks hops[2], and so on.

    Returns the result each agent of the chain got from its own ask, innermost last.
    """
    results: list[AskResult] = []

    async def act(index: int, parent: InboxItem | None) -> AskResult:
        sender, callee = hops[index], hops[index + 1]
        request = AskRequest(
            to=callee, operation="relay", input={}, timeout_s=5, parent_item=parent.id if parent else None
        )
        call = asyncio.ensure_future(services.broker.ask(sender, request))
        if index + 2 < len(hops):
            item = await services.inbox.next(callee, 0.5)
            if item is not None:
                inner = await act(index + 1, item)
                services.inbox.complete(
                    callee, item.id, WorkResult(output={"inner": inner.model_dump(mode="json")})
                )
        else:
            item = await services.inbox.next(callee, 0.5)
            if item is not None:
                services.inbox.complete(callee, item.id, WorkResult(text="end"))
        result = await call
        results.append(result)
        return result

    await act(0, None)
    return results


def test_cycle_a_b_a_is_refused(services: Services) -> None:
    results = asyncio.run(relay_chain(services, ["alpha", "gamma", "alpha"]))

    inner, outer = results
    assert inner.error is not None
    assert inner.error.code == "cycle"
    assert "alpha -> gamma -> alpha" in inner.error.details[0]
    # The refused ask delivered nothing to alpha, and the outer ask still completed.
    assert delivered(services, "alpha") == []
    assert outer.ok


def test_cycle_is_found_without_an_explicit_parent_item(services: Services) -> None:
    async def scenario() -> AskResult:
        outer = asyncio.ensure_future(
            services.broker.ask("alpha", AskRequest(to="gamma", operation="relay", input={}, timeout_s=5))
        )
        item = await services.inbox.next("gamma", 1)
        assert item is not None
        # gamma is working on alpha's ask and, without naming it, asks alpha back.
        inner = await services.broker.ask("gamma", AskRequest(to="alpha", operation="relay", input={}))
        services.inbox.complete("gamma", item.id, WorkResult(text="ok"))
        await outer
        return inner

    inner = asyncio.run(scenario())
    assert inner.error is not None and inner.error.code == "cycle"


def test_hop_limit_stops_a_long_chain(services: Services) -> None:
    services.broker = Broker(
        services.db, services.inbox, services.fleet_view, services.events, services.paths, max_hops=3
    )

    # alpha -> gamma -> delta -> echo is three hops; echo -> alpha would be the fourth.
    results = asyncio.run(relay_chain(services, ["alpha", "gamma", "delta", "echo", "alpha"]))

    innermost = results[0]
    assert innermost.error is not None
    assert innermost.error.code == "hop_limit"
    assert "alpha -> gamma -> delta -> echo -> alpha" in innermost.error.details[0]
    assert all(result.ok for result in results[1:])
    [echo_item] = delivered(services, "echo")
    assert echo_item.hop == 3
    assert echo_item.trace == ["alpha", "gamma", "delta"]


def test_parent_item_must_belong_to_the_sender(services: Services) -> None:
    foreign = services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "hi")
    result = asyncio.run(
        services.broker.ask(
            "alpha", AskRequest(to="gamma", operation="relay", input={}, parent_item=foreign.id)
        )
    )
    assert result.error is not None
    assert "parent_item" in result.error.message


def test_tell_is_queued_durably_and_respects_the_acl(services: Services) -> None:
    told = asyncio.run(services.broker.tell("alpha", TellRequest(to="beta", text="fyi: build is green")))
    denied = asyncio.run(services.broker.tell("loner", TellRequest(to="beta", text="hello")))

    assert told.ok
    assert denied.error is not None and denied.error.code == "acl_denied"
    [item] = delivered(services, "beta")
    assert item.kind is ItemKind.PEER_TELL
    assert item.text == "fyi: build is green"
    assert item.correlation_id == told.message_id
    types = [event.type for event in services.events.recent(10)]
    assert types[-3:] == ["message.sent", "message.delivered", "message.failed"]


def test_tell_with_the_same_idempotency_key_is_queued_once(services: Services) -> None:
    first = asyncio.run(
        services.broker.tell("alpha", TellRequest(to="beta", text="once", idempotency_key="t"))
    )
    again = asyncio.run(
        services.broker.tell("alpha", TellRequest(to="beta", text="once", idempotency_key="t"))
    )
    assert first.message_id == again.message_id
    assert len(delivered(services, "beta")) == 1


def test_a_tell_may_answer_a_tell_but_a_chain_of_tells_ends(services: Services) -> None:
    services.broker = Broker(
        services.db, services.inbox, services.fleet_view, services.events, services.paths, max_hops=2
    )

    async def scenario() -> list[bool]:
        outcomes = []
        sender, receiver = "alpha", "gamma"
        parent: str | None = None
        for _ in range(3):
            told = await services.broker.tell(
                sender, TellRequest(to=receiver, text="ping", parent_item=parent)
            )
            outcomes.append(told.ok)
            if not told.ok:
                assert told.error is not None and told.error.code == "hop_limit"
                break
            item = await services.inbox.next(receiver, 1)
            assert item is not None
            parent = item.id
            sender, receiver = receiver, sender
        return outcomes

    assert asyncio.run(scenario()) == [True, True, False]


def test_asks_are_handed_out_before_tells(services: Services) -> None:
    async def scenario() -> tuple[AskResult, list[ItemKind]]:
        await services.broker.tell("alpha", TellRequest(to="beta", text="low priority"))
        call = asyncio.ensure_future(
            services.broker.ask("alpha", AskRequest(to="beta", operation="summarize", input=SUMMARIZE_INPUT))
        )
        await asyncio.sleep(0.01)
        first = await services.inbox.next("beta", 1)
        second = await services.inbox.next("beta", 1)
        assert first is not None and second is not None
        services.inbox.complete("beta", first.id, summary_of(first))
        return await call, [first.kind, second.kind]

    result, order = asyncio.run(scenario())
    assert result.ok
    assert order == [ItemKind.PEER_ASK, ItemKind.PEER_TELL]


def test_redelivery_after_a_killed_agent_is_not_processed_twice(services: Services, tmp_path: Path) -> None:
    processed: list[str] = []

    def work(log: ProcessedLog, item: InboxItem) -> WorkResult:
        stored = log.seen(item.id)
        if stored is not None:
            return stored
        processed.append(item.id)
        result = summary_of(item)
        log.record(item.id, result)
        return result

    async def scenario() -> AskResult:
        call = asyncio.ensure_future(
            services.broker.ask(
                "alpha", AskRequest(to="beta", operation="summarize", input=SUMMARIZE_INPUT, timeout_s=5)
            )
        )
        # First incarnation: does the work, records it, dies before acknowledging.
        item = await services.inbox.next("beta", 1)
        assert item is not None and item.attempt == 1
        work(ProcessedLog(tmp_path / "beta-data"), item)
        # The restarted agent gets its unacknowledged claim back.
        assert services.inbox.requeue_claimed("beta") == 1
        again = await services.inbox.next("beta", 1)
        assert again is not None
        assert again.id == item.id and again.attempt == 2
        services.inbox.complete("beta", again.id, work(ProcessedLog(tmp_path / "beta-data"), again))
        return await call

    result = asyncio.run(scenario())
    assert result.ok
    assert result.output == {"summary": "hello"}
    assert len(processed) == 1


def test_trace_shows_the_path_through_agents(services: Services) -> None:
    results = asyncio.run(relay_chain(services, ["alpha", "gamma", "delta", "echo"]))
    innermost = results[0]

    trace = services.broker.messages.trace(innermost.message_id)
    assert trace is not None
    assert trace.path == ["alpha", "gamma", "delta", "echo"]
    assert [(m.sender, m.recipient, m.depth) for m in trace.messages] == [
        ("alpha", "gamma", 0),
        ("gamma", "delta", 1),
        ("delta", "echo", 2),
    ]
    assert trace.root_id == results[-1].message_id
    # Any message of the chain, or the inbox item it became, leads to the same tree.
    echo_item = delivered(services, "echo")[0]
    by_item = services.broker.messages.trace(echo_item.id)
    assert by_item is not None and by_item.root_id == trace.root_id


def test_a_workspace_contract_replaces_the_seed_and_a_broken_rewrite_keeps_the_old_one(
    services: Services,
) -> None:
    interface = services.paths.workspace("beta") / "INTERFACE.md"
    interface.parent.mkdir(parents=True, exist_ok=True)
    interface.write_text("---\noperations:\n  - name: shout\n    input: {type: object}\n---\nI shout.\n")

    assert [op.name for op in services.broker.interfaces.current("beta").operations] == ["shout"]
    refused = ask(services, "alpha", to="beta", operation="summarize", input=SUMMARIZE_INPUT)
    assert refused.error is not None and refused.error.code == "unknown_operation"

    interface.write_text("---\noperations:\n  - name: shout\n    input: {type: nonsense}\n---\n")
    state = services.broker.interfaces.state("beta")
    assert [op.name for op in state.interface.operations] == ["shout"]
    assert state.problem is not None and "shout" in state.problem

    interface.unlink()
    assert [op.name for op in services.broker.interfaces.current("beta").operations] == ["summarize"]

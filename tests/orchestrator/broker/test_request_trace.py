"""`flotilla trace`: any unique id prefix, operator messages included, the path across agents
with timings and the turns that worked each step, over a served orchestrator."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from broker_helpers import serve_one, summary_of
from click.testing import CliRunner

from agent_runtime.protocol import AskRequest, ItemKind, RunOutcome, RunRecord, WorkResult
from orchestrator.api.app import create_app
from orchestrator.broker import AmbiguousId, RequestTracer, TraceNotFound
from orchestrator.cli.main import cli
from orchestrator.scheduler.runs import RunStore
from orchestrator.services import Services
from orchestrator.state.endpoint import Endpoint, write_endpoint
from orchestrator.testing.server import serve_app


def operator_request_with_an_ask(services: Services) -> tuple[str, str]:
    """The operator writes to alpha; working it, alpha asks beta to summarize. Returns the
    operator message's item id and the ask's message id."""
    operator_item = services.inbox.submit("alpha", ItemKind.OPERATOR_MESSAGE, "operator", "summarise this").id

    async def scenario() -> str:
        claimed = await services.inbox.next("alpha", 1)
        assert claimed is not None and claimed.id == operator_item
        call = services.broker.ask(
            "alpha",
            AskRequest(
                to="beta", operation="summarize", input={"text": "hello world"}, parent_item=claimed.id
            ),
        )
        result, peer_item = await asyncio.gather(call, serve_one(services, "beta", summary_of))
        now = datetime.now(UTC)
        RunStore(services.db).add_turn(
            RunRecord(
                id="run-beta",
                agent="beta",
                trigger="peer",
                item_id=peer_item.id,
                model="test",
                started_at=now - timedelta(seconds=0.4),
                finished_at=now,
                tokens_in=50,
                tokens_out=8,
                outcome=RunOutcome.OK,
            )
        )
        services.inbox.complete("alpha", claimed.id, WorkResult(text="done"))
        return result.message_id

    return operator_item, asyncio.run(scenario())


def test_an_operator_message_is_the_top_of_its_request(services: Services) -> None:
    operator_item, ask_id = operator_request_with_an_ask(services)
    tracer = RequestTracer(services.db)
    for reference in (operator_item, operator_item[:12], ask_id, ask_id[:12]):
        found = tracer.trace(reference)
        assert found.root_id == operator_item
        assert found.path == ["operator", "alpha", "beta"]
        top, asked = found.steps
        assert (top.kind, top.sender, top.recipient, top.state) == (
            "operator_message",
            "operator",
            "alpha",
            "done",
        )
        assert (asked.kind, asked.operation, asked.state, asked.depth) == ("ask", "summarize", "answered", 1)
        assert asked.took_s is not None and top.took_s is not None and top.took_s >= asked.took_s
        assert (
            asked.run is not None and asked.run.tokens_in == 50 and asked.run.duration_s == pytest.approx(0.4)
        )
        assert found.took_s == top.took_s
    assert tracer.trace(ask_id[:12]).asked == ask_id
    assert tracer.trace(operator_item[:12]).asked == operator_item


def ids_sharing_a_prefix(monkeypatch: pytest.MonkeyPatch, prefix: str) -> Iterator[uuid.UUID]:
    """Inbox item ids that start alike, as random ids sometimes do."""
    made = (uuid.UUID(prefix + f"{n:0{32 - len(prefix)}x}") for n in range(1, 100))
    monkeypatch.setattr(uuid, "uuid4", lambda: next(made))
    return made


def test_unknown_and_ambiguous_prefixes(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    ids_sharing_a_prefix(monkeypatch, "abcd1234")
    first = services.inbox.submit("alpha", ItemKind.OPERATOR_MESSAGE, "operator", "one").id
    second = services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "two").id
    tracer = RequestTracer(services.db)
    with pytest.raises(AmbiguousId) as ambiguous:
        tracer.trace("abcd1234")
    assert ambiguous.value.candidates == sorted([first, second])
    with pytest.raises(TraceNotFound, match="no message or inbox item id starts with 'zzzz'"):
        tracer.trace("zzzz")
    with pytest.raises(TraceNotFound, match="not an id"):
        tracer.trace("a%")
    assert tracer.trace(first).root_id == first  # a whole id is never ambiguous


def test_ambiguous_prefix_exits_1_naming_the_candidates(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids_sharing_a_prefix(monkeypatch, "feed")
    for n in range(2):
        services.inbox.submit("alpha", ItemKind.OPERATOR_MESSAGE, "operator", str(n))
    with serve_app(create_app(services)) as url:
        write_endpoint(services.paths, Endpoint(url=url, token=services.operator_token, pid=os.getpid()))
        fleet = ["-f", str(services.fleet.path)]
        result = CliRunner().invoke(cli, ["trace", *fleet, "feed"])
        assert result.exit_code == 1
        assert "'feed' starts 2 ids" in str(result.exception) and "give more characters" in str(
            result.exception
        )
        missing = CliRunner().invoke(cli, ["trace", *fleet, "zzzzzz"])
        assert missing.exit_code == 1 and "no message or inbox item id starts with" in str(missing.exception)


def test_trace_command_shows_the_path_with_timings(services: Services) -> None:
    operator_item, ask_id = operator_request_with_an_ask(services)
    with serve_app(create_app(services)) as url:
        write_endpoint(services.paths, Endpoint(url=url, token=services.operator_token, pid=os.getpid()))
        fleet = ["-f", str(services.fleet.path)]
        result = CliRunner().invoke(cli, ["trace", *fleet, operator_item[:12]])
        assert result.exit_code == 0, result.output
        lines = result.output.splitlines()
        assert (
            lines[0].startswith(f"request {operator_item[:12]} started ") and "· 2 steps · took" in lines[0]
        )
        assert lines[1] == "path: operator -> alpha -> beta"
        assert "* +  0.000s operator -> alpha operator message: done in" in result.output
        assert "alpha -> beta ask summarize: answered in" in result.output
        assert "turn test 50→8 tokens $0.0000 400 ms ok" in result.output
        as_json = CliRunner().invoke(cli, ["trace", *fleet, ask_id[:12], "--json"])
        assert json.loads(as_json.output)["asked"] == ask_id

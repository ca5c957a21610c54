"""Forwarding to an OpenAI-compatible upstream (a fake one on loopback): keys, streaming,
retries, fallback and error reporting."""

from __future__ import annotations

import json

import openai
import pytest
from gateway_harness import KEY_ENV, SECRET_KEY, Launch

from orchestrator.testing.fake_upstream import Reply

AGENTS = """\
  models:
    fake:fake-model: {input_per_mtok: 1000, output_per_mtok: 2000, cached_input_per_mtok: 500}
agents:
  alice:
    model: fake:fake-model
    models: [nokey:some-model, test]
  bob:
    role: test-model only
"""

WITH_FALLBACK = """\
  fallback_model: fake:backup-model
agents:
  alice:
    model: fake:fake-model
"""


def _everything_said(orch: object) -> str:
    """Every body and header the fake upstream received, to search for leaks."""
    return json.dumps([(r.headers, r.body) for r in orch.upstream.requests])  # type: ignore[attr-defined]


def test_forwards_with_the_host_key_and_the_provider_model_name(launch: Launch) -> None:
    orch = launch(AGENTS)
    orch.upstream.script(
        Reply.say("hello from upstream", prompt_tokens=40, completion_tokens=7, cached_tokens=30)
    )
    reply = orch.client("alice").chat.completions.create(
        model="fake:fake-model", messages=[{"role": "user", "content": "hi"}], temperature=0.2, user="u-1"
    )
    assert reply.choices[0].message.content == "hello from upstream"
    [request] = orch.upstream.requests
    assert request.authorization == f"Bearer {SECRET_KEY}"
    assert orch.tokens["alice"] not in _everything_said(orch)
    assert request.body["model"] == "fake-model"
    assert request.body["temperature"] == 0.2 and request.body["user"] == "u-1"  # unknown fields pass through
    assert request.body["messages"] == [{"role": "user", "content": "hi"}]
    [row] = orch.gateway.ledger.rows("alice")
    assert (row.model, row.provider, row.status) == ("fake:fake-model", "fake", "ok")
    assert (row.tokens_in, row.tokens_out, row.cached_tokens) == (40, 7, 30)
    # fleet.yaml prices: 10 uncached at $1000/M, 30 cached at $500/M, 7 out at $2000/M.
    assert row.cost_usd == pytest.approx((10 * 1000 + 30 * 500 + 7 * 2000) / 1_000_000)
    assert row.latency_ms is not None and row.latency_ms >= 0


def test_streaming_is_forwarded_and_usage_recorded(launch: Launch) -> None:
    orch = launch(AGENTS)
    orch.upstream.script(Reply.say("one two three four", prompt_tokens=12, completion_tokens=4))
    chunks = list(
        orch.client("alice").chat.completions.create(
            model="fake:fake-model", messages=[{"role": "user", "content": "count"}], stream=True
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.split() == ["one", "two", "three", "four"]
    assert all(c.usage is None for c in chunks)  # the agent did not ask for usage
    [request] = orch.upstream.requests
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}  # asked upstream for the ledger
    assert request.authorization == f"Bearer {SECRET_KEY}"
    [row] = orch.gateway.ledger.rows("alice")
    assert (row.tokens_in, row.tokens_out, row.status, row.estimated) == (12, 4, "ok", False)


def test_streamed_usage_reaches_an_agent_that_asks(launch: Launch) -> None:
    orch = launch(AGENTS)
    orch.upstream.script(Reply.say("ok", prompt_tokens=9, completion_tokens=1))
    chunks = list(
        orch.client("alice").chat.completions.create(
            model="fake:fake-model",
            messages=[{"role": "user", "content": "x"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 9


def test_upstream_tool_calls_pass_through(launch: Launch) -> None:
    orch = launch(AGENTS)
    orch.upstream.script(Reply.call("lookup", {"q": "flotilla"}), Reply.call("lookup", {"q": "streamed"}))
    client = orch.client("alice")
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    reply = client.chat.completions.create(
        model="fake:fake-model",
        messages=[{"role": "user", "content": "find it"}],
        tools=tools,  # type: ignore[list-item]
    )
    call = reply.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "lookup" and json.loads(call.function.arguments) == {"q": "flotilla"}  # type: ignore[union-attr]
    assert orch.upstream.requests[0].body["tools"] == tools
    stream = client.chat.completions.create(
        model="fake:fake-model",
        messages=[{"role": "user", "content": "find it"}],
        tools=tools,  # type: ignore[list-item]
        stream=True,
    )
    arguments = "".join(
        (c.function.arguments or "")
        for chunk in stream
        for c in chunk.choices[0].delta.tool_calls or []
        if c.function
    )
    assert json.loads(arguments) == {"q": "streamed"}


def test_missing_key_variable_is_a_clear_error(launch: Launch) -> None:
    orch = launch(AGENTS)
    with pytest.raises(openai.APIStatusError) as caught:
        orch.client("alice").chat.completions.create(
            model="nokey:some-model", messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.status_code == 503
    body = caught.value.response.json()
    assert body["error"]["code"] == "provider_key_missing"
    assert "FLT_TEST_UNSET_KEY_VARIABLE" in body["error"]["message"]
    assert orch.upstream.requests == []
    [row] = orch.gateway.ledger.rows("alice")
    assert row.status == "error" and row.cost_usd == 0


def test_key_is_read_from_the_environment_at_call_time(
    launch: Launch, monkeypatch: pytest.MonkeyPatch
) -> None:
    orch = launch(AGENTS)
    monkeypatch.setenv(KEY_ENV, "sk-rotated-key")
    orch.client("alice").chat.completions.create(
        model="fake:fake-model", messages=[{"role": "user", "content": "a"}]
    )
    assert orch.upstream.requests[-1].authorization == "Bearer sk-rotated-key"


def test_429_and_500_are_retried_then_succeed(launch: Launch) -> None:
    orch = launch(AGENTS)
    orch.upstream.script(Reply.error(429, "slow down", retry_after=0), Reply.error(500), Reply.say("finally"))
    reply = orch.client("alice").chat.completions.create(
        model="fake:fake-model", messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.choices[0].message.content == "finally"
    assert len(orch.upstream.requests) == 3
    rows = orch.gateway.ledger.rows("alice")
    assert len(rows) == 1 and rows[0].status == "ok"  # one call, one ledger row


def test_streaming_is_retried_before_the_first_chunk(launch: Launch) -> None:
    orch = launch(AGENTS)
    orch.upstream.script(Reply.error(503), Reply.say("streamed after retry"))
    chunks = list(
        orch.client("alice").chat.completions.create(
            model="fake:fake-model", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    )
    assert (
        "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).strip()
        == "streamed after retry"
    )
    assert len(orch.upstream.requests) == 2


def test_exhausted_retries_without_fallback_give_502(launch: Launch) -> None:
    orch = launch(AGENTS)
    orch.upstream.script(Reply.error(500, "boom"), Reply.error(502), Reply.error(500, "still boom"))
    with pytest.raises(openai.APIStatusError) as caught:
        orch.client("alice").chat.completions.create(
            model="fake:fake-model", messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.status_code == 502
    body = caught.value.response.json()
    assert body["error"]["code"] == "upstream_error" and "still boom" in body["error"]["message"]
    assert len(orch.upstream.requests) == 3  # bounded attempts
    assert orch.gateway.ledger.rows("alice")[0].status == "error"


def test_long_retry_after_is_not_waited_for(launch: Launch) -> None:
    orch = launch(AGENTS)
    orch.upstream.script(Reply.error(429, "come back in an hour", retry_after=3600))
    with pytest.raises(openai.APIStatusError) as caught:
        orch.client("alice").chat.completions.create(
            model="fake:fake-model", messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.status_code == 503
    assert caught.value.response.json()["error"]["code"] == "upstream_rate_limited"
    assert caught.value.response.headers["retry-after"] == "3600"
    assert len(orch.upstream.requests) == 1


def test_client_errors_are_not_retried(launch: Launch) -> None:
    orch = launch(AGENTS)
    orch.upstream.script(Reply.error(400, "context too long"))
    with pytest.raises(openai.BadRequestError) as caught:
        orch.client("alice").chat.completions.create(
            model="fake:fake-model", messages=[{"role": "user", "content": "hi"}]
        )
    body = caught.value.response.json()
    assert body["error"]["code"] == "upstream_rejected" and "context too long" in body["error"]["message"]
    assert len(orch.upstream.requests) == 1


def test_fallback_model_serves_when_the_primary_keeps_failing(launch: Launch) -> None:
    orch = launch(WITH_FALLBACK)
    orch.upstream.script(Reply.error(500), Reply.error(503), Reply.error(500), Reply.say("from the backup"))
    response = orch.client("alice").chat.completions.with_raw_response.create(
        model="fake:fake-model", messages=[{"role": "user", "content": "hi"}]
    )
    assert response.headers["x-flotilla-model"] == "fake:backup-model"
    assert response.parse().choices[0].message.content == "from the backup"
    assert [r.body["model"] for r in orch.upstream.requests] == ["fake-model"] * 3 + ["backup-model"]
    [row] = orch.gateway.ledger.rows("alice")
    assert (row.requested_model, row.model, row.status) == ("fake:fake-model", "fake:backup-model", "ok")


def test_fallback_also_covers_streams(launch: Launch) -> None:
    orch = launch(WITH_FALLBACK)
    orch.upstream.script(Reply.error(500), Reply.error(500), Reply.error(500), Reply.say("backup stream"))
    chunks = list(
        orch.client("alice").chat.completions.create(
            model="fake:fake-model", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).strip() == "backup stream"
    assert orch.upstream.requests[-1].body["model"] == "backup-model"


def test_a_stream_broken_midway_ends_with_an_error_event(launch: Launch) -> None:
    orch = launch(AGENTS)
    orch.upstream.script(Reply.broken_stream("partial answer"))
    stream = orch.client("alice").chat.completions.create(
        model="fake:fake-model", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    received = []
    with pytest.raises(openai.APIError) as caught:
        for chunk in stream:
            received.append(chunk)
    assert "mid-stream" in str(caught.value.message)
    assert received  # the first chunks did arrive
    [row] = orch.gateway.ledger.rows("alice")
    assert row.status == "error" and row.estimated


def test_embeddings_are_forwarded(launch: Launch) -> None:
    orch = launch(AGENTS.replace("models: [nokey:some-model, test]", "models: [fake:embed-small, test]"))
    result = orch.client("alice").embeddings.create(
        model="fake:embed-small", input=["a", "bb"], encoding_format="float", dimensions=4
    )
    assert [len(d.embedding) for d in result.data] == [4, 4]
    [request] = orch.upstream.requests
    assert request.path == "/v1/embeddings"
    assert request.body["model"] == "embed-small" and request.body["input"] == ["a", "bb"]
    assert request.authorization == f"Bearer {SECRET_KEY}"
    [row] = orch.gateway.ledger.rows("alice")
    assert (row.kind, row.tokens_in, row.tokens_out) == ("embeddings", 6, 0)


@pytest.mark.parametrize("stream", [False, True])
def test_a_key_echoed_by_the_provider_never_reaches_the_agent(launch: Launch, stream: bool) -> None:
    orch = launch(AGENTS)
    orch.upstream.script(Reply.error(401, f"Incorrect API key provided: {SECRET_KEY}"))
    with pytest.raises(openai.APIStatusError) as caught:
        orch.client("alice").chat.completions.create(
            model="fake:fake-model", messages=[{"role": "user", "content": "hi"}], stream=stream
        )
    assert caught.value.status_code == 502
    body = caught.value.response.json()
    assert body["error"]["code"] == "upstream_auth"
    assert SECRET_KEY not in caught.value.response.text and "[redacted]" in body["error"]["message"]
    [row] = orch.gateway.ledger.rows("alice")
    assert row.error is not None and SECRET_KEY not in row.error
    assert len(orch.upstream.requests) == 1  # a refused key is not retried


def test_a_models_output_limit_is_set_on_requests_that_set_none(launch: Launch) -> None:
    orch = launch(
        AGENTS.replace(
            "fake:fake-model: {input_per_mtok: 1000,",
            "fake:fake-model: {max_output_tokens: 64, input_per_mtok: 1000,",
        )
    )
    client = orch.client("alice")
    client.chat.completions.create(model="fake:fake-model", messages=[{"role": "user", "content": "hi"}])
    client.chat.completions.create(
        model="fake:fake-model", messages=[{"role": "user", "content": "hi"}], max_tokens=5, stream=True
    ).close()
    orch.upstream.wait_for_requests(2)
    first, second = orch.upstream.chat_requests()
    assert first.body["max_tokens"] == 64
    assert second.body["max_tokens"] == 5 and "max_completion_tokens" not in second.body

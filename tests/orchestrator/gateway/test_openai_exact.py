"""The gateway as the official `openai` client sees it: sync, async and streaming, every refusal
with its reason in `error.message`, OpenAI's status codes, /v1/models, one retry layer."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import openai
import pytest
from gateway_harness import Launch

from orchestrator.config.models import DEFAULT_EMBEDDING_MODEL
from orchestrator.testing.fake_upstream import Reply

AGENTS = """\
  models:
    fake:fake-model: {input_per_mtok: 1, output_per_mtok: 2}
agents:
  alice:
    model: fake:fake-model
    models: [test]
  bob:
    budget: {daily_tokens: 50}
"""
HI = [{"role": "user", "content": "hi"}]


def _reason(error: openai.APIStatusError) -> dict[str, Any]:
    """The OpenAI error object the SDK parsed; its message must be in what the user is shown."""
    assert isinstance(error.body, dict), error.body
    assert error.body["message"] in str(error)
    return error.body


def test_a_bad_token_is_401_with_the_reason(launch: Launch) -> None:
    orch = launch(AGENTS)
    stranger = openai.OpenAI(base_url=orch.url + "/v1", api_key="not-a-token", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        stranger.chat.completions.create(model="test", messages=HI)  # type: ignore[arg-type]
    stranger.close()
    body = _reason(caught.value)
    assert "bearer token" in body["message"]
    assert (caught.value.type, caught.value.code) == ("authentication_error", "unauthorized")


def test_the_operator_token_is_403_with_the_reason(launch: Launch) -> None:
    orch = launch(AGENTS)
    operator = openai.OpenAI(base_url=orch.url + "/v1", api_key=orch.tokens["operator"], max_retries=0)
    with pytest.raises(openai.PermissionDeniedError) as caught:
        operator.models.list()
    operator.close()
    assert "for agents" in _reason(caught.value)["message"]


def test_a_model_outside_the_allowlist_is_403_naming_what_is_allowed(launch: Launch) -> None:
    orch = launch(AGENTS)
    with pytest.raises(openai.PermissionDeniedError) as caught:
        orch.client("bob").chat.completions.create(model="fake:fake-model", messages=HI)  # type: ignore[arg-type]
    body = _reason(caught.value)
    assert "may not use model 'fake:fake-model'" in body["message"] and "allowed: test" in body["message"]
    assert (caught.value.code, caught.value.param, caught.value.type) == (
        "model_not_allowed",
        "model",
        "permission_error",
    )


def test_an_invalid_request_is_400_naming_the_field(launch: Launch) -> None:
    orch = launch(AGENTS)
    with pytest.raises(openai.BadRequestError) as caught:
        orch.client("alice").chat.completions.create(model="test", messages=[])
    body = _reason(caught.value)
    assert caught.value.status_code == 400 and caught.value.param == "messages"
    assert "messages" in body["message"]
    raw = orch.http(orch.tokens["alice"]).post("/v1/chat/completions", json={"messages": HI})
    assert raw.status_code == 400
    assert raw.json()["error"]["param"] == "model" and "Field required" in raw.json()["error"]["message"]


def test_n_above_one_is_refused_clearly(launch: Launch) -> None:
    orch = launch(AGENTS)
    with pytest.raises(openai.BadRequestError) as caught:
        orch.client("alice").chat.completions.create(model="test", messages=HI, n=2)  # type: ignore[arg-type]
    body = _reason(caught.value)
    assert caught.value.param == "n" and caught.value.code == "unsupported_parameter"
    assert "n=2 is not supported" in body["message"]
    assert orch.gateway.ledger.rows("alice") == []  # refused before anything was reserved
    one = orch.client("alice").chat.completions.create(model="test", messages=HI, n=1)  # type: ignore[arg-type]
    assert len(one.choices) == 1


def test_an_exhausted_budget_is_429_with_the_reason_and_is_not_retried(launch: Launch) -> None:
    orch = launch(AGENTS)
    client = openai.OpenAI(base_url=orch.url + "/v1", api_key=orch.tokens["bob"], max_retries=2)
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="test", messages=HI, max_tokens=100)  # type: ignore[arg-type]
    client.close()
    body = _reason(caught.value)
    assert "daily_tokens budget of agent 'bob'" in body["message"]
    assert caught.value.type == "insufficient_quota" and caught.value.code == "budget_exhausted"
    rows = orch.gateway.ledger.rows("bob")
    assert rows == []  # refused before it was reserved, once: the SDK did not come back twice


def test_unknown_routes_under_v1_are_404_in_openai_shape(launch: Launch) -> None:
    orch = launch(AGENTS)
    response = orch.http(orch.tokens["alice"]).post("/v1/completions", json={"model": "test", "prompt": "x"})
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and "/v1/completions" in error["message"]
    # Flotilla's own API keeps its own error shape.
    elsewhere = orch.http(orch.tokens["operator"]).get("/api/v1/no-such-route")
    assert elsewhere.status_code == 404 and elsewhere.json()["error"] == "not_found"


def test_models_lists_what_this_agent_may_call(launch: Launch) -> None:
    orch = launch(AGENTS)
    alice = orch.client("alice")
    listed = alice.models.list()
    # The fleet names no embedding model and alice calls a real one: every agent gets the default.
    assert [m.id for m in listed.data] == ["fake:fake-model", "test", DEFAULT_EMBEDDING_MODEL]
    assert {m.owned_by for m in listed.data} == {"fake", "flotilla"}
    assert all(m.object == "model" for m in listed.data)
    assert [m.id for m in orch.client("bob").models.list().data] == ["test", DEFAULT_EMBEDDING_MODEL]
    assert alice.models.retrieve("fake:fake-model").id == "fake:fake-model"
    with pytest.raises(openai.NotFoundError) as caught:
        orch.client("bob").models.retrieve("fake:fake-model")
    assert "fake:fake-model" in _reason(caught.value)["message"]
    assert caught.value.code == "model_not_found"


def test_a_failing_upstream_call_is_tried_three_times_not_nine(launch: Launch) -> None:
    """The gateway retries the provider; its final 502 tells the SDK not to retry it again."""
    orch = launch(AGENTS)
    orch.upstream.script(*[Reply.error(500, "provider down")] * 9)
    client = openai.OpenAI(base_url=orch.url + "/v1", api_key=orch.tokens["alice"], max_retries=2)
    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="fake:fake-model", messages=HI)  # type: ignore[arg-type]
    client.close()
    assert caught.value.status_code == 502
    assert "provider down" in _reason(caught.value)["message"]
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert len(orch.upstream.chat_requests()) == 3


def test_a_dead_orchestrator_is_still_retried_by_the_client(launch: Launch) -> None:
    """The only retries left to the SDK: the gateway could not be reached at all."""
    attempts: list[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        raise httpx.ConnectError("connection refused", request=request)

    client = openai.OpenAI(
        base_url="http://127.0.0.1:9/v1",
        api_key="x",
        max_retries=2,
        http_client=openai.DefaultHttpxClient(transport=httpx.MockTransport(refuse)),
    )
    with pytest.raises(openai.APIConnectionError):
        client.with_options(timeout=5).chat.completions.create(model="test", messages=HI)  # type: ignore[arg-type]
    client.close()
    assert len(attempts) == 3


def test_streaming_refusals_carry_the_reason(launch: Launch) -> None:
    orch = launch(AGENTS)
    with pytest.raises(openai.PermissionDeniedError) as caught:
        orch.client("bob").chat.completions.create(model="fake:fake-model", messages=HI, stream=True)  # type: ignore[arg-type]
    assert "may not use model" in _reason(caught.value)["message"]
    orch.upstream.script(Reply.broken_stream("partial"))
    stream = orch.client("alice").chat.completions.create(model="fake:fake-model", messages=HI, stream=True)  # type: ignore[arg-type]
    with pytest.raises(openai.APIError) as broken:
        for _ in stream:
            pass
    assert "mid-stream" in broken.value.message


def test_async_client_sees_the_same_answers(launch: Launch) -> None:
    orch = launch(AGENTS)

    async def scenario() -> tuple[str, str, list[str], str]:
        client = openai.AsyncOpenAI(base_url=orch.url + "/v1", api_key=orch.tokens["alice"], max_retries=0)
        try:
            reply = await client.chat.completions.create(model="test", messages=HI)  # type: ignore[arg-type]
            stream = await client.chat.completions.create(
                model="test",
                messages=HI,  # type: ignore[arg-type]
                stream=True,
                stream_options={"include_usage": True},
            )
            pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]
            models = await client.models.list()
            try:
                await client.chat.completions.create(model="fake:other", messages=HI)  # type: ignore[arg-type]
            except openai.PermissionDeniedError as refused:
                reason = str(refused.body["message"]) if isinstance(refused.body, dict) else ""
            return (
                reply.choices[0].message.content or "",
                "".join(pieces),
                [m.id for m in models.data],
                reason,
            )
        finally:
            await client.close()

    whole, streamed, models, reason = asyncio.run(scenario())
    assert whole == streamed == "[test model] received: hi"
    assert models == ["fake:fake-model", "test", DEFAULT_EMBEDDING_MODEL]
    assert "may not use model 'fake:other'" in reason


def test_a_stream_without_usage_gets_the_gateways_count(launch: Launch) -> None:
    """A provider that streams no usage: the ledger and the agent get the gateway's cl100k count."""
    orch = launch(AGENTS)
    orch.upstream.script(Reply(text="one two three", stream_usage=False))
    chunks = list(
        orch.client("alice").chat.completions.create(
            model="fake:fake-model",
            messages=HI,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    [usage] = [c.usage for c in chunks if c.usage is not None]
    [row] = orch.gateway.ledger.rows("alice")
    assert row.estimated and row.status == "ok"
    assert (usage.prompt_tokens, usage.completion_tokens) == (row.tokens_in, row.tokens_out)
    assert row.tokens_out == orch.gateway.counter.count("one two three ")
    assert row.tokens_in > 0 and row.cost_usd > 0

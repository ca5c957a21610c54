"""A model call made again with its idempotency key (the agent's reply stream broke after the
gateway had settled it) is answered from its record: the provider is called once and the
ledger charges it once, across an orchestrator restart, streamed or not. Keys are per agent."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
from gateway_harness import Launch, Orchestrator

from agent_runtime.protocol import IDEMPOTENCY_HEADER
from agent_runtime.work.chat import ChatClient
from orchestrator.testing.fake_upstream import Reply

FLEET = """\
  models:
    fake:fake-model: {input_per_mtok: 1000, output_per_mtok: 2000}
agents:
  alice:
    model: fake:fake-model
  bob:
    model: fake:fake-model
"""
HI = [{"role": "user", "content": "what is the capital of France?"}]


def _post(orch: Orchestrator, agent: str, key: str | None, *, stream: bool = False) -> httpx.Response:
    body: dict[str, Any] = {"model": "fake:fake-model", "messages": HI}
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    headers = {IDEMPOTENCY_HEADER: key} if key else {}
    response = orch.http(orch.tokens[agent]).post("/v1/chat/completions", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response


def _charged(orch: Orchestrator, agent: str) -> list[tuple[str, int, int, float]]:
    return [(r.status, r.tokens_in, r.tokens_out, r.cost_usd) for r in orch.gateway.ledger.rows(agent)]


def _streamed(response: httpx.Response) -> list[dict[str, Any]]:
    events = [line[len("data: ") :] for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    return [json.loads(event) for event in events[:-1]]


def test_a_call_made_again_after_a_restart_is_charged_once(launch: Launch) -> None:
    first = launch(FLEET)
    first.upstream.script(Reply.say("Paris", prompt_tokens=30, completion_tokens=4))
    answered = _post(first, "alice", "call-1").json()
    assert answered["choices"][0]["message"]["content"] == "Paris"
    assert len(first.upstream.chat_requests()) == 1

    again = launch(FLEET)  # a new orchestrator on the same state.db: the answer never arrived
    again.upstream.script(Reply.say("a second, different answer"))
    replayed = _post(again, "alice", "call-1").json()
    assert replayed["choices"][0]["message"]["content"] == "Paris"
    assert replayed["usage"] == answered["usage"]
    assert len(again.upstream.chat_requests()) == 1  # the fake's record spans both orchestrators
    [row] = _charged(again, "alice")
    assert row[:3] == ("ok", 30, 4)


def test_a_streamed_call_made_again_gets_the_same_stream_and_one_charge(launch: Launch) -> None:
    orch = launch(FLEET)
    orch.upstream.script(Reply(text="it is Paris", tool_calls=[("lookup", {"city": "Paris"})]))
    client = ChatClient(orch.url + "/v1", orch.tokens["alice"], max_retries=0)
    try:
        tries = [
            list(client.stream("fake:fake-model", HI, None, headers={IDEMPOTENCY_HEADER: "stream-1"}))
            for _ in range(2)
        ]
    finally:
        client.close()

    def said(chunks: list[dict[str, Any]]) -> tuple[str, list[Any], Any]:
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
        calls = [
            (call["id"], call["function"]["name"], call["function"]["arguments"])
            for c in chunks
            if c["choices"]
            for call in c["choices"][0]["delta"].get("tool_calls") or []
        ]
        return text, calls, chunks[-1]["usage"]

    assert said(tries[1]) == said(tries[0])
    assert said(tries[0])[0].strip() == "it is Paris"
    assert said(tries[0])[1] == [("call_fake_0", "lookup", '{"city": "Paris"}')]
    assert len(orch.upstream.chat_requests()) == 1
    assert len(_charged(orch, "alice")) == 1
    # The same call asked without streaming gets the settled answer as one completion.
    whole = _post(orch, "alice", "stream-1").json()
    assert whole["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "lookup"
    assert whole["choices"][0]["finish_reason"] == "tool_calls"
    assert len(orch.upstream.chat_requests()) == 1 and len(_charged(orch, "alice")) == 1


def test_a_non_streamed_answer_is_replayed_as_a_stream(launch: Launch) -> None:
    orch = launch(FLEET)
    orch.upstream.script(Reply.say("Paris", prompt_tokens=12, completion_tokens=3))
    _post(orch, "alice", "mixed-1")
    chunks = _streamed(_post(orch, "alice", "mixed-1", stream=True))
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == "Paris"
    assert chunks[-1]["usage"]["prompt_tokens"] == 12
    assert len(orch.upstream.chat_requests()) == 1 and len(_charged(orch, "alice")) == 1


def test_different_keys_and_no_key_are_separate_calls(launch: Launch) -> None:
    orch = launch(FLEET)
    for key in ("k-1", "k-2", None, None):
        _post(orch, "alice", key)
    assert len(orch.upstream.chat_requests()) == 4
    assert [row[0] for row in _charged(orch, "alice")] == ["ok"] * 4


def test_a_key_is_not_shared_between_agents(launch: Launch) -> None:
    orch = launch(FLEET)
    orch.upstream.script(Reply.say("for alice"), Reply.say("for bob"))
    assert _post(orch, "alice", "same-key").json()["choices"][0]["message"]["content"] == "for alice"
    assert _post(orch, "bob", "same-key").json()["choices"][0]["message"]["content"] == "for bob"
    assert len(orch.upstream.chat_requests()) == 2
    assert len(_charged(orch, "alice")) == 1 and len(_charged(orch, "bob")) == 1


def test_a_key_reused_for_another_request_is_refused(launch: Launch) -> None:
    orch = launch(FLEET)
    _post(orch, "alice", "k-1")
    other = {"model": "fake:fake-model", "messages": [{"role": "user", "content": "something else"}]}
    response = orch.http(orch.tokens["alice"]).post(
        "/v1/chat/completions", json=other, headers={IDEMPOTENCY_HEADER: "k-1"}
    )
    assert response.status_code == 422
    assert "k-1" in response.json()["error"]["message"]
    assert len(orch.upstream.chat_requests()) == 1 and len(_charged(orch, "alice")) == 1


def test_a_failed_call_keeps_no_answer_and_is_made_again(launch: Launch) -> None:
    orch = launch(FLEET)
    orch.upstream.script(Reply.error(400, "bad request upstream"), Reply.say("now it works"))
    refused = orch.http(orch.tokens["alice"]).post(
        "/v1/chat/completions",
        json={"model": "fake:fake-model", "messages": HI},
        headers={IDEMPOTENCY_HEADER: "k-err"},
    )
    assert refused.status_code >= 400
    assert _post(orch, "alice", "k-err").json()["choices"][0]["message"]["content"] == "now it works"
    assert [row[0] for row in _charged(orch, "alice")] == ["ok", "error"]


def test_a_copy_sent_while_the_call_is_in_flight_waits_for_it(launch: Launch) -> None:
    orch = launch(FLEET)
    orch.upstream.script(Reply.say("Paris, once"))
    orch.upstream.hold()
    answers: list[str] = []

    def call() -> None:
        answers.append(_post(orch, "alice", "in-flight").json()["choices"][0]["message"]["content"])

    first = threading.Thread(target=call)
    first.start()
    assert orch.upstream.wait_for_requests(1)
    second = threading.Thread(target=call)
    second.start()
    time.sleep(0.3)  # lets the copy reach the gateway while the first call is held (either way: one charge)
    orch.upstream.release()
    first.join(30)
    second.join(30)
    assert answers == ["Paris, once", "Paris, once"]
    assert len(orch.upstream.chat_requests()) == 1 and len(_charged(orch, "alice")) == 1

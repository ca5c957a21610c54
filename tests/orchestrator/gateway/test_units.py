"""The gateway's pure parts: the test model's script, prices, retry delays, token counting."""

from __future__ import annotations

import json
from typing import Any

import pytest
from gateway_harness import REPO_ROOT  # noqa: F401  (puts the repository on sys.path)

from orchestrator.config.models import LLMConfig, ModelInfo
from orchestrator.gateway.models import ChatCompletionRequest
from orchestrator.gateway.prices import TEST_PRICE, UNPRICED, price_of
from orchestrator.gateway.providers.base import UpstreamError
from orchestrator.gateway.providers.openai_compat import _retry_after
from orchestrator.gateway.providers.script import reply_to
from orchestrator.gateway.retry import RetryPolicy
from orchestrator.gateway.tokens import TokenCounter

TOOLS = [{"type": "function", "function": {"name": n}} for n in ("search", "ask_agent", "write_file")]


def request(*messages: tuple[str, str], tools: list[dict[str, Any]] | None = None, **extra: Any) -> Any:
    body = {"model": "test", "messages": [{"role": r, "content": c} for r, c in messages], **extra}
    if tools is not None:
        body["tools"] = tools
    return ChatCompletionRequest.model_validate(body)


# ----------------------------------------------------------------------------- the script


def test_echo_names_the_test_model() -> None:
    reply = reply_to(request(("user", "what   is\nup")))
    assert reply.text == "[test model] received: what is up" and reply.tool_calls == []


def test_echo_is_deterministic_and_clipped() -> None:
    long = "word " * 100
    first, second = reply_to(request(("user", long))), reply_to(request(("user", long)))
    assert first == second
    assert first.text is not None and len(first.text) < 240 and first.text.endswith("…")


def test_flush_returns_json_lines_of_remembered_facts() -> None:
    reply = reply_to(
        request(
            ("system", "FLUSH_FACTS: extract durable facts as JSON lines."),
            ("user", "remember: the deploy key is in vault\nother chatter"),
            ("assistant", "noted"),
            ("user", "- remember: staging is on port 8443\nuser: remember: the deploy key is in vault"),
            ("user", "Remember that lunch is at noon (no colon, not a fact line)"),
        )
    )
    assert reply.text is not None
    facts = [json.loads(line) for line in reply.text.splitlines()]
    assert facts == [{"fact": "the deploy key is in vault"}, {"fact": "staging is on port 8443"}]


def test_flush_with_nothing_to_remember_is_empty() -> None:
    assert reply_to(request(("user", "FLUSH_FACTS"))).text == ""


def test_summary_keeps_every_fact_line_and_survives_resummarising() -> None:
    history = [
        ("user", "remember: alpha is 1"),
        ("assistant", "ok"),
        ("tool", "fact: beta is 2"),
        ("user", "chit chat that can go"),
        ("system", "SUMMARIZE the conversation above. Keep every line starting with remember:"),
    ]
    first = reply_to(request(*history)).text
    assert first is not None
    assert first.splitlines() == [
        "[test model] summary of 4 messages (2 user, 1 assistant, 1 tool).",
        "remember: alpha is 1",
        "fact: beta is 2",
    ]
    again = reply_to(
        request(("system", "SUMMARIZE"), ("assistant", first), ("user", "remember: gamma is 3"))
    ).text
    assert again is not None
    assert again.splitlines()[1:] == ["remember: alpha is 1", "fact: beta is 2", "remember: gamma is 3"]


def test_markers_in_old_user_turns_do_not_trigger() -> None:
    reply = reply_to(request(("user", "please SUMMARIZE"), ("assistant", "ok"), ("user", "hello")))
    assert reply.text == "[test model] received: hello"


def test_call_directives_become_parallel_tool_calls() -> None:
    reply = reply_to(
        request(("user", 'call search {"q": "a b"} and then call write_file {"path": "x"}'), tools=TOOLS)
    )
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("search", {"q": "a b"}),
        ("write_file", {"path": "x"}),
    ]


def test_call_without_json_calls_with_empty_arguments() -> None:
    reply = reply_to(request(("user", "call search now"), tools=TOOLS))
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("search", "{}")]


def test_call_of_an_unknown_tool_with_json_is_explained() -> None:
    reply = reply_to(request(("user", 'call launch_rockets {"n": 3}'), tools=TOOLS))
    assert reply.tool_calls == []
    assert (
        reply.text
        == "[test model] cannot call launch_rockets: not in the tool catalog (search, ask_agent, write_file)"
    )


def test_plain_english_call_is_not_a_directive() -> None:
    assert (
        reply_to(request(("user", "call me later"), tools=TOOLS)).text
        == "[test model] received: call me later"
    )


def test_no_tools_means_no_tool_calls() -> None:
    assert reply_to(request(("user", 'call search {"q": 1}'))).tool_calls == []
    assert (
        reply_to(request(("user", 'call search {"q": 1}'), tools=TOOLS, tool_choice="none")).tool_calls == []
    )


def test_ask_directive_needs_ask_agent_and_json() -> None:
    asked = reply_to(request(("user", 'ask summarizer summarize {"text": "hi"}'), tools=TOOLS))
    assert [json.loads(c.arguments) for c in asked.tool_calls] == [
        {"agent": "summarizer", "operation": "summarize", "input": {"text": "hi"}}
    ]
    without_tool = reply_to(request(("user", 'ask summarizer summarize {"text": "hi"}'), tools=TOOLS[:1]))
    assert without_tool.tool_calls == []
    assert reply_to(request(("user", "ask him about it"), tools=TOOLS)).tool_calls == []


def test_tool_results_are_summarised_by_tool_name() -> None:
    body = {
        "model": "test",
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}},
                    {"id": "c2", "type": "function", "function": {"name": "write_file", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "3 hits"},
            {"role": "tool", "tool_call_id": "c2", "content": "written"},
        ],
    }
    reply = reply_to(ChatCompletionRequest.model_validate(body))
    assert reply.text == "[test model] search returned: 3 hits; write_file returned: written"


def test_heartbeat_gets_a_short_status() -> None:
    quiet = reply_to(request(("user", "Heartbeat tick at 09:00")))
    assert quiet.text == "[test model] heartbeat: all quiet, nothing needs doing."
    busy = reply_to(request(("user", "HEARTBEAT\nReasons:\n- rule due: daily 09:00\n- inbox: 2 pending")))
    assert busy.text == "[test model] heartbeat: checked 2 item(s), status ok."


def test_directives_win_over_heartbeat() -> None:
    reply = reply_to(request(("user", 'heartbeat: call search {"q": "news"}'), tools=TOOLS))
    assert [c.name for c in reply.tool_calls] == ["search"]


# ----------------------------------------------------------------------------- prices


def test_prices_builtin_prefix_and_fleet_override() -> None:
    llm = LLMConfig(models={"openai:gpt-4o-mini": ModelInfo(output_per_mtok=1.0)})
    assert price_of("test", llm) == TEST_PRICE
    dated = price_of("openai:gpt-4o-2024-08-06", llm)
    assert (dated.input_per_mtok, dated.output_per_mtok) == (2.50, 10.00)
    mini = price_of("openai:gpt-4o-mini", llm)  # the longest prefix wins, fleet overrides one field
    assert (mini.input_per_mtok, mini.output_per_mtok, mini.cached_input_per_mtok) == (0.15, 1.0, 0.075)
    assert price_of("openrouter:openai/gpt-4.1-mini", llm).input_per_mtok == 0.40
    assert price_of("ollama:llama3.2", llm) == UNPRICED


def test_cost_separates_cached_input() -> None:
    price = price_of("openai:gpt-4o", LLMConfig())
    assert price.cost(1_000_000, 0, cached_tokens=400_000) == pytest.approx(0.6 * 2.5 + 0.4 * 1.25)
    assert price.cost(0, 1_000_000) == pytest.approx(10.0)
    assert TEST_PRICE.cost(500_000, 500_000) == pytest.approx(1.0)


# ----------------------------------------------------------------------------- retries


def test_backoff_doubles_up_to_the_cap_and_stops_after_the_attempts() -> None:
    policy = RetryPolicy(attempts=5, base_delay_s=0.5, max_delay_s=1.5, jitter=0.0)
    failure = UpstreamError("x", status=500)
    assert [policy.delay_after(n, failure) for n in range(1, 6)] == [0.5, 1.0, 1.5, 1.5, None]


def test_backoff_is_jittered_below_its_nominal_delay() -> None:
    delays = {RetryPolicy().delay_after(2, UpstreamError("x", status=503)) for _ in range(30)}
    assert all(delay is not None and 0.8 <= delay <= 1.0 for delay in delays)
    assert len(delays) > 5


def test_retry_after_is_honoured_only_when_small() -> None:
    policy = RetryPolicy(max_retry_after_s=10)
    assert policy.delay_after(1, UpstreamError("x", status=429, retry_after_s=3)) == 3
    assert policy.delay_after(1, UpstreamError("x", status=429, retry_after_s=60)) is None


def test_client_errors_are_not_retryable() -> None:
    policy = RetryPolicy(jitter=0.0)
    assert policy.delay_after(1, UpstreamError("x", status=400)) is None
    assert policy.delay_after(1, UpstreamError("x", status=None)) == policy.base_delay_s  # no answer at all


def test_retry_after_header_forms() -> None:
    assert _retry_after("2") == 2.0
    assert _retry_after("garbage") is None
    assert _retry_after(None) is None
    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past


# ----------------------------------------------------------------------------- tokens


def test_counter_falls_back_to_an_estimate_and_says_so() -> None:
    broken = TokenCounter("no-such-encoding")
    assert broken.tokenizer == "estimate"
    assert broken.count("abcdefghi") == 3  # ceil(9 / 4)
    real = TokenCounter()
    assert real.tokenizer == "cl100k"
    assert real.count("hello world") == 2


def test_chat_count_adds_framing_and_tools() -> None:
    counter = TokenCounter()
    plain = counter.count_chat([("user", "hi")])
    assert plain == 3 + 3 + counter.count("user") + counter.count("hi")
    assert counter.count_chat([("user", "hi")], tools=[{"type": "function"}]) > plain

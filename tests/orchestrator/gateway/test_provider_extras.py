"""Provider-specific request fields (top_k, min_p...) reach a provider whose `extra_body` lets them
through, and are refused with a 400 naming the field otherwise; an empty model name is a 400."""

from __future__ import annotations

from typing import Any

import httpx
from gateway_harness import Launch

from orchestrator.config.models import ProviderConfig, is_local_url
from orchestrator.testing.fake_upstream import FakeUpstream

HI = [{"role": "user", "content": "hi"}]


def fleet(upstream_url: str) -> str:
    return f"""\
    listed: {{base_url: "{upstream_url}", extra_body: [top_k]}}
    closed: {{base_url: "{upstream_url}", extra_body: []}}
    remote: {{base_url: "https://api.example.com/v1"}}
agents:
  alice:
    model: fake:fake-model
    models: [listed:fake-model, closed:fake-model, remote:some-model, test]
"""


def post(http: httpx.Client, body: dict[str, Any]) -> httpx.Response:
    return http.post("/v1/chat/completions", json=body)


def test_a_local_server_gets_the_provider_fields_as_they_were_sent(
    launch: Launch, upstream: tuple[FakeUpstream, str]
) -> None:
    orch = launch(fleet(upstream[1]))
    http = orch.http(orch.tokens["alice"])
    body = {
        "model": "fake:fake-model",
        "messages": HI,
        "top_k": 40,
        "min_p": 0.05,
        "chat_template_kwargs": {},
    }
    answered = post(http, body)
    assert answered.status_code == 200, answered.text
    [request] = orch.upstream.chat_requests()
    assert (request.body["top_k"], request.body["min_p"], request.body["chat_template_kwargs"]) == (
        40,
        0.05,
        {},
    )
    assert request.body["model"] == "fake-model"


def test_an_allow_list_passes_what_it_names_and_refuses_the_rest(
    launch: Launch, upstream: tuple[FakeUpstream, str]
) -> None:
    orch = launch(fleet(upstream[1]))
    http = orch.http(orch.tokens["alice"])
    assert post(http, {"model": "listed:fake-model", "messages": HI, "top_k": 5}).status_code == 200
    refused = post(http, {"model": "listed:fake-model", "messages": HI, "top_k": 5, "min_p": 0.1})
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["param"] == "min_p" and "llm.providers.listed.extra_body" in error["message"]
    closed = post(http, {"model": "closed:fake-model", "messages": HI, "top_k": 5})
    assert closed.status_code == 400 and closed.json()["error"]["param"] == "top_k"
    assert [r.body.get("top_k") for r in orch.upstream.chat_requests()] == [5]  # only the one allowed


def test_a_remote_provider_and_the_test_model_take_no_provider_fields_by_default(
    launch: Launch, upstream: tuple[FakeUpstream, str]
) -> None:
    orch = launch(fleet(upstream[1]))
    http = orch.http(orch.tokens["alice"])
    remote = post(http, {"model": "remote:some-model", "messages": HI, "top_k": 5})
    assert remote.status_code == 400 and remote.json()["error"]["param"] == "top_k"
    test = post(http, {"model": "test", "messages": HI, "top_k": 5})
    assert test.status_code == 400
    assert test.json()["error"]["param"] == "top_k" and "built in" in test.json()["error"]["message"]
    assert post(http, {"model": "test", "messages": HI}).status_code == 200


def test_an_empty_model_name_is_a_400_naming_the_model(
    launch: Launch, upstream: tuple[FakeUpstream, str]
) -> None:
    orch = launch(fleet(upstream[1]))
    http = orch.http(orch.tokens["alice"])
    for path, body in (
        ("/v1/chat/completions", {"model": "", "messages": HI}),
        ("/v1/embeddings", {"model": "", "input": "hi"}),
    ):
        answered = http.post(path, json=body)
        assert answered.status_code == 400, answered.text
        assert answered.json()["error"]["param"] == "model"


def test_which_servers_count_as_local() -> None:
    local = [
        "http://127.0.0.1:11434/v1",
        "http://localhost:8000/v1",
        "http://ollama:11434/v1",
        "http://10.1.2.3/v1",
    ]
    remote = ["https://api.openai.com/v1", "https://openrouter.ai/api/v1", "http://8.8.8.8/v1"]
    assert [is_local_url(url) for url in local] == [True] * len(local)
    assert [is_local_url(url) for url in remote] == [False] * len(remote)
    assert ProviderConfig(base_url="https://api.openai.com/v1", extra_body="any").passes_extra("top_k")

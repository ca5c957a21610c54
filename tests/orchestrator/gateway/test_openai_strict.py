"""The gateway is as strict as OpenAI where a client would notice: what OpenAI refuses with 400
(an unknown role, field or sampling value out of range, nothing to embed, unreadable JSON) and
404 (a model that does not exist) is refused the same way, naming what is wrong."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from gateway_harness import Launch

from orchestrator.config.loader import load_fleet

AGENTS = """\
agents:
  alice:
    model: test
  bob:
    role: leaves
"""
HI = [{"role": "user", "content": "hi"}]


def refused(http: httpx.Client, path: str, body: Any, status: int) -> dict[str, Any]:
    if isinstance(body, bytes):
        response = http.post(path, content=body, headers={"content-type": "application/json"})
    else:
        response = http.post(path, json=body)
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    return error


def test_what_openai_refuses_with_400_is_refused_with_400(launch: Launch) -> None:
    orch = launch(AGENTS)
    http = orch.http(orch.tokens["alice"])
    role = refused(
        http, "/v1/chat/completions", {"model": "test", "messages": [{"role": "boss", "content": "x"}]}, 400
    )
    assert role["param"] == "messages.0.role" and role["type"] == "invalid_request_error"
    hot = refused(http, "/v1/chat/completions", {"model": "test", "messages": HI, "temperature": 5}, 400)
    assert hot["param"] == "temperature" and "less than or equal to 2" in hot["message"]
    extra = refused(http, "/v1/chat/completions", {"model": "test", "messages": HI, "temprature": 1}, 400)
    assert extra["param"] == "temprature"
    for nothing in ([], "", [""]):
        empty = refused(http, "/v1/embeddings", {"model": "test", "input": nothing}, 400)
        assert empty["param"] == "input"
    broken = refused(http, "/v1/chat/completions", b'{"model": "test", "messages": [', 400)
    assert broken["param"] is None and "not valid JSON" in broken["message"]


def test_openai_parameters_the_gateway_does_not_read_still_pass(launch: Launch) -> None:
    orch = launch(AGENTS)
    reply = orch.client("alice").chat.completions.create(
        model="test",
        messages=HI,
        temperature=0.2,
        top_p=0.9,
        seed=7,
        user="u1",
        metadata={"k": "v"},  # type: ignore[arg-type]
    )
    assert reply.choices[0].message.content


def test_a_model_that_does_not_exist_is_404_model_not_found(launch: Launch) -> None:
    orch = launch(AGENTS)
    with pytest.raises(openai.NotFoundError) as caught:
        orch.client("alice").chat.completions.create(model="gpt-4o", messages=HI)  # type: ignore[arg-type]
    assert caught.value.code == "model_not_found" and "gpt-4o" in str(caught.value)


def test_a_removed_agents_token_is_401(launch: Launch) -> None:
    orch = launch(AGENTS)
    fleet_file = orch.services.fleet.path
    fleet_file.write_text(fleet_file.read_text().replace("  bob:\n    role: leaves\n", ""))
    results = orch.services.manager.apply(candidate=load_fleet(fleet_file))
    assert all(result.ok for result in results)
    with pytest.raises(openai.AuthenticationError) as caught:
        orch.client("bob").chat.completions.create(model="test", messages=HI)  # type: ignore[arg-type]
    assert caught.value.code == "unauthorized"

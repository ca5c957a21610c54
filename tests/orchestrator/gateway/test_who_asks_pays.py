"""Who asks pays: the model calls an agent makes for a peer's item are charged to the peer's budget
(and shown against the agent), so a peer's flood of tells spends no one else's budget; once the
peer's budget is exhausted its items are refused with the reason. Over real HTTP, with the
gateway's priced test model."""

from __future__ import annotations

import asyncio

import openai
import pytest
from gateway_harness import Launch, Orchestrator
from rich.console import Console

from agent_runtime.protocol import ItemKind, WorkResult
from orchestrator.cli.costs import costs_table
from orchestrator.gateway.ledger import Charge
from orchestrator.gateway.models import CostsReport

FLEET = """\
  models:
    test: {{input_per_mtok: 1000, output_per_mtok: 1000}}
agents:
  mallory:
    talks_to: [writer]
    budget: {{daily_usd: {mallory_usd}}}
  writer:
    talks_to: [mallory]
    budget: {{daily_usd: 100}}
  bystander: {{}}
limits:
  rates:
    tells: 1000/m
    pair: 1000/m
    intake: 1000/m
"""
HI = [{"role": "user", "content": "summarize what you were told, at length"}]
# What 60 s of tells at the default pair rate (20/m, a burst of 20) can deliver.
FLOOD = 40


def spend_today(orch: Orchestrator) -> dict[str, tuple[float, float, float]]:
    report = orch.http(orch.tokens["operator"]).get("/api/v1/costs").json()
    return {
        agent["agent"]: (
            agent["today_usd"],
            agent["paid_for_peers_today_usd"],
            agent["worked_for_peers_today_usd"],
        )
        for agent in report["agents"]
    }


def work_on_next_item(orch: Orchestrator) -> openai.APIStatusError | None:
    """The writer's turn: claim its next item, make one model call for it, answer it."""
    item = asyncio.run(orch.services.inbox.next("writer", 1))
    assert item is not None
    refused = None
    try:
        orch.client("writer").chat.completions.create(model="test", messages=HI)  # type: ignore[arg-type]
    except openai.APIStatusError as status:
        refused = status
    orch.services.inbox.complete("writer", item.id, WorkResult(ok=True, text="done"))
    return refused


def test_a_flood_of_tells_is_paid_by_its_sender(launch: Launch) -> None:
    orch = launch(FLEET.format(mallory_usd=100))
    # The writer's own work (the operator's message) is its own to pay, as before.
    orch.services.inbox.submit("writer", ItemKind.OPERATOR_MESSAGE, "operator", "draft the notes")
    assert work_on_next_item(orch) is None
    before = spend_today(orch)
    assert before["writer"][0] > 0 and before["mallory"] == (0, 0, 0)

    mallory = orch.http(orch.tokens["mallory"])
    for number in range(FLOOD):
        answer = mallory.post("/agent/v1/tell", json={"to": "writer", "text": f"tell {number}"})
        assert answer.status_code == 200 and answer.json()["ok"], answer.text
        assert work_on_next_item(orch) is None
    after = spend_today(orch)

    assert after["writer"][0] == pytest.approx(before["writer"][0])  # the writer's spend is unchanged
    assert after["bystander"] == before["bystander"] == (0, 0, 0)
    assert after["mallory"][0] > 0 and after["mallory"][1] == pytest.approx(after["mallory"][0])
    assert after["writer"][2] == pytest.approx(after["mallory"][1])  # shown against the recipient
    assert orch.gateway.budgets.own_budget_left("writer")


def test_a_peer_that_cannot_pay_gets_its_items_refused_with_the_reason(launch: Launch) -> None:
    orch = launch(FLEET.format(mallory_usd=0.05))
    mallory = orch.http(orch.tokens["mallory"])
    assert mallory.post("/agent/v1/tell", json={"to": "writer", "text": "go"}).json()["ok"]
    orch.gateway.budgets.reserve(  # mallory spends its whole day on its own
        "mallory", kind="chat", model="test", provider="test", estimate=Charge(10, 10, 0.05)
    )
    refused = work_on_next_item(orch)
    assert refused is not None and refused.status_code == 429
    assert "writer works on an item mallory sent, and mallory pays for it" in str(refused)
    answer = mallory.post("/agent/v1/tell", json={"to": "writer", "text": "again"}).json()
    assert not answer["ok"]
    assert "mallory" in answer["error"]["message"] and "who asks pays" in answer["error"]["message"]
    assert spend_today(orch)["writer"][0] == 0
    # The operator's work is still the writer's to pay, and its budget is whole.
    orch.services.inbox.submit("writer", ItemKind.OPERATOR_MESSAGE, "operator", "draft the notes")
    assert work_on_next_item(orch) is None


def test_the_costs_table_shows_both_sides(launch: Launch) -> None:
    orch = launch(FLEET.format(mallory_usd=100))
    mallory = orch.http(orch.tokens["mallory"])
    assert mallory.post("/agent/v1/tell", json={"to": "writer", "text": "go"}).json()["ok"]
    assert work_on_next_item(orch) is None
    figures = spend_today(orch)
    assert figures["mallory"][1] > 0 and figures["writer"][2] == pytest.approx(figures["mallory"][1])
    assert figures["writer"][0] == 0
    report = CostsReport.model_validate(orch.http(orch.tokens["operator"]).get("/api/v1/costs").json())
    console = Console(width=200, record=True)
    console.print(costs_table(report))
    rows = {line.split()[1]: line for line in console.export_text().splitlines() if line.count("│") > 3}
    assert "paid $" in rows["mallory"] and "did $0.000000" in rows["mallory"]
    assert "paid $0.000000" in rows["writer"] and "did $" in rows["writer"]

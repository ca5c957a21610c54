"""Salient facts of the memory store in the prompt: present, stable while the prompt's prefix
is, refreshed when the memory block changes anyway."""

from __future__ import annotations

from typing import Any

from tests.agent_runtime.conftest import HarnessFactory
from tests.agent_runtime.fakes import Reply, system_text


def test_salient_facts_are_in_the_prompt_and_stable_within_an_item(harness: HarnessFactory) -> None:
    seen: list[str] = []

    def model(body: dict[str, Any]) -> Reply:
        seen.append(system_text(body))
        if body["messages"][-1]["role"] == "tool" or len(seen) > 1:
            return Reply("noted")
        return Reply.call(
            "memory_save", text="The user's train leaves at 7:40 from platform 3", source="user_stated"
        )

    h = harness(model)
    h.worker.memory.memory_store.save("The user is allergic to peanuts", source="operator", category="health")
    h.send("My train leaves at 7:40 from platform 3.")
    first, second = seen[0], seen[1]
    assert "## Salient facts" in first and "- The user is allergic to peanuts (operator)" in first
    assert first == second  # the save during the item leaves this item's prompt prefix alone
    train = "- The user's train leaves at 7:40 from platform 3 (user_stated)"
    h.send("Anything else?")
    assert train not in seen[-1] and seen[-1].startswith(first)  # the cached prefix holds
    h.worker.workspace.write("MEMORY.md", "# Memory\n\n- The office is on Rue Verte\n", "operator", "edit")
    h.send("And now?")
    assert train in seen[-1]  # the memory block changed anyway: the facts were refreshed with it


def test_a_forgotten_fact_leaves_the_salient_facts_at_the_next_item(harness: HarnessFactory) -> None:
    seen: list[str] = []

    def model(body: dict[str, Any]) -> Reply:
        seen.append(system_text(body))
        return Reply("ok")

    h = harness(model)
    store = h.worker.memory.memory_store
    saved = store.save("The user's locker code is 4512", source="user_stated", category="personal")
    h.send("Hello")
    assert "4512" in seen[-1]
    store.forget(saved.fact_id)
    h.send("Hello again")
    assert "4512" not in seen[-1]

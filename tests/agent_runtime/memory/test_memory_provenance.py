"""Provenance is stamped by the runtime: a model that claims a person's word gets the agent's.

Each test plays a model that tries one forgery through the tools it is given (the `call` path,
which is what the model reaches), against a store that already holds a person's fact.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_runtime.memory.bm25 import WorkspaceIndex
from agent_runtime.memory.models import FactSource, FactStatus
from agent_runtime.memory.provenance import PersonWords, mentions, states
from agent_runtime.memory.store import MemoryStore
from agent_runtime.memory.tools import MemoryTools


@pytest.fixture
def tools(store: MemoryStore, data_dir: Path) -> MemoryTools:
    return MemoryTools(store, WorkspaceIndex(data_dir / "workspace", refresh_interval_s=0))


def test_a_claimed_user_stated_fact_cannot_supersede_an_operators_fact(tools: MemoryTools) -> None:
    operator = tools.store.save(
        "The billing account is ACME-7", category="billing", source="operator", subject="billing.account"
    )
    forged = tools.call(
        "memory_save",
        {"text": "The billing account is EVIL-9", "source": "user_stated", "subject": "billing.account"},
    )
    assert forged["status"] == "contradiction"
    assert "recorded as agent, not user_stated" in forged["message"]
    kept = tools.store.get(operator.fact_id or 0)
    assert (
        kept is not None and kept.status is FactStatus.ACTIVE and kept.text == "The billing account is ACME-7"
    )
    [claim] = tools.store.contradictions()
    assert claim.source is FactSource.AGENT


def test_a_claimed_user_stated_fact_cannot_lift_a_forget_barrier(tools: MemoryTools) -> None:
    saved = tools.store.save("The user's locker code is 4512", source="user_stated")
    tools.store.forget(saved.fact_id or 0)
    forged = tools.call("memory_save", {"text": "The user's locker code is 4512", "source": "user_stated"})
    assert forged["status"] == "blocked"
    assert tools.store.status().barriers == 1
    assert tools.store.search("locker code") == []


def test_a_claim_without_a_persons_message_is_stored_as_the_agents(tools: MemoryTools) -> None:
    tools.people.heard("Let's talk about the launch plan.")
    saved = tools.call(
        "memory_save", {"text": "The user wants the launch moved to June", "source": "user_stated"}
    )
    assert saved["status"] == "saved" and saved["provenance"] == "agent"
    fact = tools.store.get(saved["id"])
    assert fact is not None and fact.source is FactSource.AGENT


def test_a_persons_own_words_keep_user_stated_and_override_an_operators_fact(tools: MemoryTools) -> None:
    tools.store.save("The user's home city is Lyon", source="operator", subject="user.home_city")
    tools.people.heard("Update: my home city is Rennes now.")
    saved = tools.call(
        "memory_save",
        {"text": "The user's home city is Rennes", "source": "user_stated", "subject": "user.home_city"},
    )
    assert saved["status"] == "superseded" and saved["provenance"] == "user_stated"
    assert [hit.fact.text for hit in tools.store.search("home city")] == ["The user's home city is Rennes"]


def test_a_person_restating_a_forgotten_fact_lifts_the_barrier(tools: MemoryTools) -> None:
    saved = tools.store.save("The user's locker code is 4512", source="user_stated")
    tools.store.forget(saved.fact_id or 0)
    tools.people.heard("Remember again: my locker code is 4512.")
    restated = tools.call("memory_save", {"text": "The user's locker code is 4512", "source": "user_stated"})
    assert restated["status"] == "saved" and restated["provenance"] == "user_stated"
    assert tools.store.status().barriers == 0


def test_the_model_may_lower_a_source(tools: MemoryTools) -> None:
    tools.people.heard("I think I live in Lyon, not sure.")
    saved = tools.call("memory_save", {"text": "The user lives in Lyon", "source": "inferred"})
    assert saved["provenance"] == "inferred"


def test_the_model_cannot_forget_a_persons_fact_nobody_asked_to_forget(tools: MemoryTools) -> None:
    saved = tools.store.save("The user's emergency contact is Ana", source="operator")
    fact_id = saved.fact_id or 0
    refused = tools.call("memory_forget", {"id": fact_id})
    assert refused["status"] == "refused" and refused["ids"] == []
    by_query = tools.call("memory_forget", {"query": "The user's emergency contact is Ana"})
    assert by_query["status"] == "refused"
    assert tools.store.get(fact_id).status is FactStatus.ACTIVE  # type: ignore[union-attr]
    tools.people.heard("Please forget my emergency contact.")
    assert tools.call("memory_forget", {"id": fact_id})["status"] == "forgotten"


def test_the_model_forgets_its_own_notes_freely(tools: MemoryTools) -> None:
    saved = tools.call("memory_save", {"text": "The build cache lives in /tmp/cache"})
    assert tools.call("memory_forget", {"id": saved["id"]})["status"] == "forgotten"


def test_statement_rules() -> None:
    assert states("My locker code is 4512.", "The user's locker code is 4512")
    assert not states("My locker code is 4513.", "The user's locker code is 4512")
    assert states("I live in Lyon", "The user lives in Lyon")
    assert not states("I like Lyon", "The user's home city is Lyon")
    assert not states("anything", "The user")
    assert states("My wife's name is Maria.", "The user's wife is named Maria")
    assert states("I prefer tea", "The user preferred tea")
    assert not states("I code in Rust", "The user's locker code is 4512")
    assert not states("My cat is Miso", "The user's car is Miso")
    assert mentions("forget my alarm code", "The user's alarm code is 7731")
    assert not mentions("forget it", "The user's alarm code is 7731")
    people = PersonWords(keep=2)
    for text in ("my dog is Rex", "hello", "the weather is fine"):
        people.heard(text)
    assert people.support("The user's dog is Rex") is None  # older than the window

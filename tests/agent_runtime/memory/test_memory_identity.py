"""Distinct facts stay distinct, a forget bars the value in any wording, and a guess that
disputes what a person said waits as a contradiction: the store's behaviour on the cases of the
labelled memory set (`bench.memory_dataset`), with the test model's vectors."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from conftest import DIMS, ManualClock, StoreFactory

from agent_runtime.memory.embeddings import (
    MEASURED_SEARCH_FLOOR,
    DeterministicEmbedder,
    GatewayEmbedder,
    search_floor,
)
from agent_runtime.memory.models import (
    LOCAL_EMBEDDING_MODEL,
    FactSource,
    FactStatus,
    MemoryConfig,
    SaveOutcome,
)
from agent_runtime.memory.store import MemoryStore
from agent_runtime.memory.tools import MemoryTools, ToolInputError
from agent_runtime.protocol import AgentOp
from agent_runtime.transport.serving import _memory_op
from bench.memory_dataset import generate
from bench.memory_scoring import CachedEmbedder, score_pairs
from orchestrator.memory_access.models import MemoryHistoryResult

FORGOTTEN_PHONE = "The user's phone number is 555-0100"
REWORDINGS = [
    "Phone of the user: 555-0100",
    "User phone: 555 0100",
    "Call the user at 5550100",
    "The user can be reached on 555-0100",
    "Their mobile is (555) 0100",
    "Contact number for the user is 555.0100",
    "Ring 555-0100 to reach the user",
    "The user's number: 555-0100.",
    "555-0100 is the user's phone",
    "User's telephone number = 555-0100",
    "The user's cell: 555 - 0100",
    "If you need the user, dial 555-0100",
    "Phone no. 555-0100 belongs to the user",
    "The user gave 555-0100 as their phone number",
    "User contact: tel 555-0100",
    "Reach them by phone at 555/0100",
    "The user's home line is 555-0100",
    "Text the user on +1 555-0100",
    "Note: phone 555-0100 (user)",
    "Dial 555 0100 for the user",
]


def test_invoices_with_other_numbers_are_two_facts(store: MemoryStore) -> None:
    first = store.save("Invoice 1001 for Acme was paid on 3 March.", category="billing")
    second = store.save("Invoice 1002 for Acme was paid on 5 March.", category="billing")
    assert second.outcome is SaveOutcome.SAVED
    assert first.fact_id is not None and store.get(first.fact_id).status is FactStatus.ACTIVE  # type: ignore[union-attr]
    assert [hit.fact.text for hit in store.search("invoice 1001")][:1] == [
        "Invoice 1001 for Acme was paid on 3 March."
    ]


def test_templated_observations_with_refs_are_never_retired(store: MemoryStore) -> None:
    people = ["Anna", "Omar", "Lena", "Ravi"]
    for day in range(1, 201):
        note = f"On day {day}, {people[day % 4]} noted the pump pressure was normal (ref: MARK-{day:03d})."
        assert store.save(note, category="observations").outcome is SaveOutcome.SAVED
    assert store.status().facts_active == 200
    assert store.status().facts_superseded == 0
    hits = store.search("(ref: MARK-100)", 3)
    assert "(ref: MARK-100)" in hits[0].fact.text


def test_one_attribute_of_one_thing_changing_still_supersedes(store: MemoryStore) -> None:
    old = store.save("Ticket OPS-41 is assigned to Anna in the platform team.", category="tickets")
    new = store.save("Ticket OPS-41 is assigned to Omar in the platform team.", category="tickets")
    assert new.outcome is SaveOutcome.SUPERSEDED and new.replaced_id == old.fact_id
    other = store.save("Ticket OPS-42 is assigned to Omar in the platform team.", category="tickets")
    assert other.outcome is SaveOutcome.SAVED


def test_a_set_valued_attribute_gains_a_value_without_losing_one(store: MemoryStore) -> None:
    store.save("Anna speaks German fluently.", category="people")
    second = store.save("Anna speaks Italian fluently.", category="people")
    assert second.outcome is SaveOutcome.SAVED
    assert store.status().facts_active == 2


def test_a_forget_bars_the_value_in_twenty_rewordings(
    store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    saved = store.save(FORGOTTEN_PHONE, category="contact", source=FactSource.USER_STATED)
    assert saved.fact_id is not None
    store.forget(saved.fact_id)
    caplog.set_level(logging.INFO, logger="agent_runtime.memory.store")
    refused = []
    for wording in REWORDINGS:
        for source in (FactSource.AGENT, FactSource.EXTRACTED, FactSource.INFERRED):
            result = store.save(wording, category="notes", source=source)
            if result.outcome is SaveOutcome.BLOCKED:
                refused.append(wording)
    assert sorted(set(refused)) == sorted(REWORDINGS)
    assert store.status().facts_active == 0
    assert not [hit for hit in store.search("phone number", 5)]
    assert "refused" in caplog.text and "0100" not in caplog.text
    # Another number, or the same words without the number, are other facts.
    assert store.save("The user's fax number is 555-0199", category="contact").outcome is SaveOutcome.SAVED
    # A person saying it again restores it.
    again = store.save("Phone of the user: 555-0100", category="contact", source=FactSource.USER_STATED)
    assert again.outcome is SaveOutcome.SAVED
    later = store.save("Call the user at 555-0100", category="notes", source=FactSource.AGENT)
    assert later.outcome is not SaveOutcome.BLOCKED


def test_a_guess_disputing_a_persons_fact_is_a_pending_contradiction(store: MemoryStore) -> None:
    stated = store.save("The user wants replies in French", category="preferences", source="user_stated")
    guessed = store.save("The user wants replies in English", category="preferences", source="inferred")
    assert guessed.outcome is SaveOutcome.CONTRADICTION and guessed.fact_id == stated.fact_id
    [pending] = store.contradictions()
    assert pending.text == "The user wants replies in English"
    assert [hit.fact.text for hit in store.search("reply language replies")] == [
        "The user wants replies in French"
    ]


def test_the_fixed_subset_of_the_labelled_pairs(open_store: StoreFactory) -> None:
    """The first 120 pairs of the set's held-out half (the rules were not looked at on it)."""
    subset = [pair for pair in generate().pairs if pair.half == "held_out"][:120]
    texts = [text for pair in subset for text in (pair.first, pair.second)]
    scores = score_pairs(subset, CachedEmbedder(DeterministicEmbedder(DIMS), texts), DIMS)
    assert scores.counts["updated"] >= 25 and scores.counts["distinct"] >= 40
    assert scores.lost == 0, scores.lost_examples
    assert scores.supersession_precision >= 0.98
    assert scores.supersession_recall >= 0.8
    assert scores.contradiction_precision >= 0.95


def test_history_and_as_of_reach_superseded_facts_with_their_validity(
    store: MemoryStore, clock: ManualClock
) -> None:
    tools = MemoryTools(store)
    first = store.save("The design review meeting is at 15:00 on Tuesdays.", category="work")
    clock.advance(86400)
    moved_at = clock.now()
    second = store.save("The design review meeting is at 16:30 on Tuesdays.", category="work")
    assert second.outcome is SaveOutcome.SUPERSEDED
    clock.advance(3600)
    ordinary = tools.call("memory_search", {"query": "design review meeting time"})
    assert [result["text"] for result in ordinary["results"] if result["from"] == "fact"] == [
        "The design review meeting is at 16:30 on Tuesdays."
    ]
    history = tools.call(
        "memory_search", {"query": "when was the design review before it moved", "history": True}
    )
    newest, oldest = history["results"]
    assert newest["ref"] == f"fact:{second.fact_id}" and newest["current"] and newest["valid_until"] is None
    assert oldest["ref"] == f"fact:{first.fact_id}" and not oldest["current"]
    assert oldest["valid_until"] == moved_at.isoformat() and oldest["replaced_by"] == f"fact:{second.fact_id}"
    before = (moved_at - timedelta(hours=1)).date().isoformat()
    then = tools.call("memory_search", {"query": "design review meeting", "as_of": before})
    assert [result["text"] for result in then["results"]] == [
        "The design review meeting is at 15:00 on Tuesdays."
    ]
    with pytest.raises(ToolInputError, match="as_of"):
        tools.call("memory_search", {"query": "design review", "as_of": "last tuesday"})


def test_the_operators_history_search_gives_validity_intervals(
    store: MemoryStore, clock: ManualClock
) -> None:
    store.save("Server db3 runs version 2.4.", category="servers")
    clock.advance(3600)
    upgraded = store.save("Server db3 runs version 2.9.", category="servers")
    answer = _memory_op(store, AgentOp.MEMORY_HISTORY, {"q": "db3 version", "k": 5})
    result = MemoryHistoryResult.model_validate(answer)
    assert [version.fact.text for version in result.versions] == [
        "Server db3 runs version 2.9.",
        "Server db3 runs version 2.4.",
    ]
    assert result.versions[1].replaced_by == upgraded.fact_id and result.versions[0].current
    with pytest.raises(ValueError, match="as_of 'soon'"):
        _memory_op(store, AgentOp.MEMORY_HISTORY, {"q": "db3", "as_of": "soon"})


def test_the_search_floor_is_the_models_measured_one_unless_set() -> None:
    local = GatewayEmbedder("http://127.0.0.1:9", "token", LOCAL_EMBEDDING_MODEL, 256)
    assert search_floor(MemoryConfig(), local) == MEASURED_SEARCH_FLOOR[LOCAL_EMBEDDING_MODEL]
    assert search_floor(MemoryConfig(min_similarity=0.3), local) == 0.3
    assert search_floor(MemoryConfig(), DeterministicEmbedder(8)) == MemoryConfig().min_similarity

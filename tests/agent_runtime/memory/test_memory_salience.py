"""Salient facts for the initial context, and categories for facts saved without one."""

from __future__ import annotations

from agent_runtime.memory.categories import by_keywords
from agent_runtime.memory.salience import HEADING, salient_block
from agent_runtime.memory.store import MemoryStore


def test_salient_block_picks_the_most_salient_within_budget_in_id_order(store: MemoryStore) -> None:
    store.save("The user once mentioned liking jazz", source="inferred")
    store.save("The user's name is Ana Lopez", source="user_stated", category="people")
    store.save("The user is allergic to peanuts", source="operator", category="health")
    store.save("The staging server restarts nightly", source="agent", category="ops")
    block = salient_block(store, budget_tokens=300)
    lines = block.splitlines()
    assert lines[0] == HEADING
    assert lines[1:] == [
        "- The user's name is Ana Lopez (user_stated)",
        "- The user is allergic to peanuts (operator)",
        "- The staging server restarts nightly (agent)",
    ]
    assert "jazz" not in block  # an inferred fact starts below the salience floor
    # A tight budget keeps the most salient (the newer of equals) first.
    tight = salient_block(store, budget_tokens=30)
    assert tight.splitlines()[1:] == ["- The user is allergic to peanuts (operator)"]
    assert len(tight) <= 30 * 4


def test_salient_block_leaves_out_what_memory_md_states_and_forgotten_facts(store: MemoryStore) -> None:
    store.save("The user's name is Ana Lopez", source="user_stated", category="people")
    gone = store.save("The user's locker code is 4512", source="user_stated", category="personal")
    store.forget(gone.fact_id or 0)
    assert salient_block(store, known_lines=["# Memory", "- the user's name is Ana Lopez."]) == ""


def test_keyword_rules_categorise_without_an_embedding() -> None:
    assert by_keywords("The user prefers green tea") == "preferences"
    assert by_keywords("The user's sister is called Maya") == "people"
    assert by_keywords("The release of the billing feature is on Friday") == "projects"
    assert by_keywords("The sky is blue") is None


def test_facts_saved_without_a_category_are_categorised(store: MemoryStore) -> None:
    for text in ("Ana cooks risotto on Sundays", "Ana bakes sourdough bread", "Ana cooks pasta with basil"):
        store.save(text, category="cooking")
    by_centroid = store.save("Ana cooks risotto with basil on Sundays")
    by_keyword = store.save("The user prefers window seats")
    fallback = store.save("Quarks come in six flavours")
    assert store.get(by_centroid.fact_id or 0).category == "cooking"  # type: ignore[union-attr]
    assert store.get(by_keyword.fact_id or 0).category == "preferences"  # type: ignore[union-attr]
    assert store.get(fallback.fact_id or 0).category == "general"  # type: ignore[union-attr]


def test_a_fact_on_a_known_subject_joins_its_category_and_replaces_it(store: MemoryStore) -> None:
    old = store.save("The team standup is at 9:30 in room B", category="office")
    new = store.save("The team standup is at 9:45 in room B")
    assert new.outcome.value == "superseded" and new.replaced_id == old.fact_id
    assert store.get(new.fact_id or 0).category == "office"  # type: ignore[union-attr]

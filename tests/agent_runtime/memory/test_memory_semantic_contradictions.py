"""Contradictions without a subject key: the rule 'disputed by meaning' (`truth`), measured on
a labelled set of sentence pairs with the built-in local embedding model, and what it does in
the store: a keyless inference that disagrees with what the user stated is held as a pending
contradiction; vectors without meaning (the test model's) never make one."""

from __future__ import annotations

import statistics

import pytest
from conftest import StoreFactory
from labelled_pairs import PAIRS

from agent_runtime.memory.disagreement import disagreement
from agent_runtime.memory.embeddings import (
    MEASURED_CONTRADICTION_SIMILARITY,
    DeterministicEmbedder,
    GatewayEmbedder,
    is_semantic,
)
from agent_runtime.memory.models import (
    LOCAL_EMBEDDING_MODEL,
    FactSource,
    FactStatus,
    MemoryConfig,
    SaveOutcome,
)
from agent_runtime.memory.store import MemoryStore

pytest.importorskip("wordllama")

from orchestrator.gateway.providers.local_embedding import DIMENSIONS, embed_texts

THRESHOLD = MEASURED_CONTRADICTION_SIMILARITY[LOCAL_EMBEDDING_MODEL]
# The floors the rule holds on the labelled set (docs/memory.md gives the measured figures).
PRECISION_FLOOR = 0.9
RECALL_FLOOR = 0.65


class LocalEmbedder:
    """The gateway's `wordllama-256`, called in-process as the gateway would compute it."""

    semantic = True
    model = LOCAL_EMBEDDING_MODEL

    def __call__(self, texts: list[str]) -> list[list[float]]:
        return embed_texts(texts)


def similarity(first: str, second: str) -> float:
    a, b = embed_texts([first, second])
    return sum(x * y for x, y in zip(a, b, strict=True))


def semantic_store(open_store: StoreFactory, **config: object) -> MemoryStore:
    settings = MemoryConfig(dimensions=DIMENSIONS, embedding_model=LOCAL_EMBEDDING_MODEL, **config)  # type: ignore[arg-type]
    return open_store(embedder=LocalEmbedder(), config=settings)


def test_the_rule_holds_its_precision_and_recall_on_the_labelled_set() -> None:
    similarities: dict[str, list[float]] = {"contradicting": [], "compatible": [], "unrelated": []}
    found = {"tp": 0, "fp": 0, "fn": 0}
    for first, second, label in PAIRS:
        close = similarity(first, second)
        similarities[label].append(close)
        flagged = close >= THRESHOLD and disagreement(first, second) is not None
        if flagged and label == "contradicting":
            found["tp"] += 1
        elif flagged:
            found["fp"] += 1
        elif label == "contradicting":
            found["fn"] += 1
    precision = found["tp"] / (found["tp"] + found["fp"])
    recall = found["tp"] / (found["tp"] + found["fn"])
    report = {
        label: (round(min(values), 3), round(statistics.median(values), 3), round(max(values), 3))
        for label, values in similarities.items()
    }
    print(f"similarity min/median/max by label: {report}; precision {precision:.3f}, recall {recall:.3f}")
    assert len(PAIRS) >= 30
    assert precision >= PRECISION_FLOOR, (precision, found)
    assert recall >= RECALL_FLOOR, (recall, found)
    # Unrelated facts that share no frame stay far below the threshold.
    assert statistics.median(similarities["unrelated"]) < THRESHOLD / 2


def test_disagreement_names_what_differs_and_leaves_elaborations_alone() -> None:
    assert disagreement("The user's flight leaves at 7:15", "The user's flight departs at 9:40") == "numbers"
    assert disagreement("The user has two cats", "The user has three cats") == "numbers"
    assert disagreement("The user is allergic to peanuts", "The user isn't allergic to peanuts") == "negation"
    assert disagreement("The user lives in Berlin", "The user lives in Paris") == "names"
    assert disagreement("The meeting is at 3pm", "The meeting is at 3 pm in Room B") is None
    assert (
        disagreement("The user's flight leaves at 7:15", "The flight leaves at 7:15 from Terminal 2") is None
    )
    assert disagreement("The user works at Siemens", "The user works at Siemens in Munich") is None
    assert disagreement("Anna is the user's wife", "The user's wife is called Anna") is None
    assert disagreement("Since March I live in Porto", "Since March the user lives in Porto") is None
    assert disagreement("Anna's flight is on Monday at 7:15", "Tom's flight is on Friday at 9:00") is None


def test_a_keyless_inference_beside_a_user_statement_is_recorded_as_a_contradiction(
    open_store: StoreFactory,
) -> None:
    stated, guessed = "The user drinks coffee every morning", "The user never drinks coffee"
    # Under the same-subject rule's 0.85: before this rule, both sat side by side.
    assert 0.75 <= similarity(stated, guessed) < 0.85
    store = semantic_store(open_store)
    kept = store.save(stated, category="habits", source=FactSource.USER_STATED)
    result = store.save(guessed, category="preferences", source=FactSource.INFERRED)
    assert result.outcome is SaveOutcome.CONTRADICTION
    assert result.fact_id == kept.fact_id
    assert "negation" in result.detail and "similarity 0.7" in result.detail
    [pending] = store.contradictions()
    assert pending.fact_id == kept.fact_id and pending.text == guessed
    assert pending.source is FactSource.INFERRED
    assert [fact.text for fact in store.list_facts()] == [stated]
    # The operator keeps what the user said: the guess is barred from coming back.
    store.resolve(pending.id, "old")
    again = store.save(guessed, category="preferences", source=FactSource.INFERRED)
    assert again.outcome is SaveOutcome.BLOCKED


def test_a_user_statement_replaces_a_keyless_guess_it_contradicts(open_store: StoreFactory) -> None:
    store = semantic_store(open_store)
    old, new = "The user's rent is 1200 euros a month", "The user pays 950 euros rent per month"
    guess = store.save(old, category="money", source=FactSource.INFERRED)
    # Filed in another category: the same-subject rule (one category) does not see the guess.
    stated = store.save(new, category="home", source=FactSource.USER_STATED)
    assert stated.outcome is SaveOutcome.SUPERSEDED and stated.replaced_id == guess.fact_id
    assert "numbers" in stated.detail
    assert guess.fact_id is not None and store.get(guess.fact_id).status is FactStatus.SUPERSEDED  # type: ignore[union-attr]
    assert [fact.text for fact in store.history(stated.fact_id or 0)] == [old, new]


def test_elaborations_facts_of_equal_rank_and_other_keys_are_left_side_by_side(
    open_store: StoreFactory,
) -> None:
    store = semantic_store(open_store)
    store.save("The user's flight leaves at 7:15", category="travel", source=FactSource.USER_STATED)
    elaboration = store.save(
        "The user's flight departs at 7:15 from Terminal 2", category="travel", source=FactSource.INFERRED
    )
    assert elaboration.outcome is SaveOutcome.SAVED
    store.save("The user's gym class is on Wednesday evenings", category="health", source=FactSource.AGENT)
    # 0.95 similar, in another category: no guess retires a fact of the same rank.
    same_rank = store.save(
        "The user's gym class is on Friday evenings", category="schedule", source=FactSource.AGENT
    )
    assert same_rank.outcome is SaveOutcome.SAVED
    store.save("The user has two cats", category="home", source=FactSource.USER_STATED, subject="user.cats")
    keyed = store.save(
        "The user has three cats", category="home", source=FactSource.INFERRED, subject="user.neighbour_cats"
    )
    assert keyed.outcome is SaveOutcome.SAVED
    assert store.contradictions() == []


def test_vectors_without_meaning_never_make_a_contradiction(open_store: StoreFactory) -> None:
    """Keyword-only and test-model stores: contradictions only through a shared subject (a key,
    or one attribute of one thing changed in the same words)."""
    hashed = open_store()
    assert hashed.contradiction_threshold() is None
    hashed.save("The user drinks coffee every morning", category="habits", source=FactSource.USER_STATED)
    result = hashed.save("Coffee is never drunk by the user", category="habits", source=FactSource.INFERRED)
    assert result.outcome is SaveOutcome.SAVED
    assert hashed.contradictions() == []
    negated = hashed.save("The user never drinks coffee", category="habits", source=FactSource.INFERRED)
    assert negated.outcome is SaveOutcome.CONTRADICTION
    assert not is_semantic(DeterministicEmbedder(8))
    assert not is_semantic(lambda texts: [[1.0] for _ in texts])
    assert not is_semantic(None)


def test_which_threshold_a_store_uses(open_store: StoreFactory) -> None:
    assert semantic_store(open_store).contradiction_threshold() == THRESHOLD
    gateway_test = GatewayEmbedder("http://127.0.0.1:9", "token", "test", 8)
    hosted = GatewayEmbedder("http://127.0.0.1:9", "token", "openai:text-embedding-3-small", 8)
    assert not gateway_test.semantic and hosted.semantic
    # A model that carries meaning but has no measured figure: off unless the config sets one.
    unmeasured = MemoryStore(":memory:", embedder=hosted, config=MemoryConfig(dimensions=8))
    assert unmeasured.contradiction_threshold() is None
    unmeasured.close()
    set_by_hand = MemoryStore(
        ":memory:", embedder=hosted, config=MemoryConfig(dimensions=8, contradiction_similarity=0.8)
    )
    assert set_by_hand.contradiction_threshold() == 0.8
    set_by_hand.close()
    for embedder in (gateway_test, hosted):
        embedder.close()


def test_close_facts_about_distinct_things_stay_side_by_side(open_store: StoreFactory) -> None:
    store = semantic_store(open_store)
    first = store.save("Invoice 1001 for Acme was paid on 3 March.", category="billing")
    second = store.save("Invoice 1002 for Acme was paid on 5 March.", category="billing")
    assert second.outcome is SaveOutcome.SAVED
    assert store.get(first.fact_id or 0).status is FactStatus.ACTIVE  # type: ignore[union-attr]
    names = ["Anna", "Omar", "Lena", "Ravi", "Chen"]
    for day in range(1, 101):
        note = f"On day {day}, {names[day % 5]} noted the boiler was checked (ref: MARK-{day:03d})."
        store.save(note, category="observations")
    assert store.status().facts_superseded == 0 and store.status().facts_active == 102
    stated = store.save("The user wants replies in French", category="preferences", source="user_stated")
    guessed = store.save("The user wants replies in English", category="preferences", source="inferred")
    assert guessed.outcome is SaveOutcome.CONTRADICTION and guessed.fact_id == stated.fact_id

"""The fact store: recall across reopening, duplicates, supersession, precedence, forgetting,
editing, categories, episodes."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from conftest import DIMS, ManualClock, StoreFactory, SwitchableEmbedder

from agent_runtime.memory.contradictions import ContradictionNotFound
from agent_runtime.memory.embeddings import DeterministicEmbedder
from agent_runtime.memory.models import (
    ContradictionStatus,
    FactSource,
    FactStatus,
    MemoryConfig,
    MemoryMode,
    SaveOutcome,
)
from agent_runtime.memory.store import FactNotFound, MemoryInputError, MemoryStore
from agent_runtime.memory.vectors import VectorError


def texts(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [hit.fact.text for hit in hits]


def test_facts_are_found_after_the_database_is_closed_and_reopened(open_store: StoreFactory) -> None:
    store = open_store()
    saved = store.save("The user's dog is called Rex", category="pets", source="user_stated", turn_ids=["t1"])
    store.save("The quarterly report is due on 2025-06-30", category="work")
    store.add_episode(
        "2025-05-01T09:00:00Z", "2025-05-01T10:00:00Z", ["t1", "t2"], "Planned the garden layout"
    )
    store.close()

    reopened = open_store()
    hits = reopened.search("what is the dog called?", k=3)
    assert hits[0].fact.id == saved.fact_id
    assert hits[0].fact.text == "The user's dog is called Rex"
    assert hits[0].fact.source is FactSource.USER_STATED
    assert hits[0].fact.turn_ids == ["t1"]
    assert reopened.search_episodes("garden")[0].episode.turn_ids == ["t1", "t2"]
    assert reopened.status().facts_active == 2


def test_wal_mode_is_on(store: MemoryStore) -> None:
    mode = store.query("PRAGMA journal_mode")[0][0]
    assert mode == "wal"


def test_the_wal_is_checkpointed_in_the_background_only_after_writes(store: MemoryStore) -> None:
    checkpointer = store._checkpointer
    assert checkpointer is not None and checkpointer.alive
    time.sleep(0.3)  # opening wrote the schema: that checkpoint is done by now
    settled = checkpointer.runs
    store.search("anything", k=1)  # a read is not a reason to wake up
    time.sleep(0.3)
    assert checkpointer.runs == settled

    store.save("The office plants are watered on Mondays", category="office")
    deadline = time.monotonic() + 5
    while checkpointer.runs == settled and time.monotonic() < deadline:
        time.sleep(0.02)
    assert checkpointer.runs == settled + 1
    # Everything written is now in the database file: a checkpoint from here has nothing to copy.
    busy, wal_frames, copied = store.query("PRAGMA wal_checkpoint(PASSIVE)")[0]
    assert busy == 0 and wal_frames == copied

    store.close()
    assert not checkpointer.alive


def test_a_restated_fact_is_merged_not_duplicated(store: MemoryStore) -> None:
    first = store.save("I prefer dark mode", category="preferences", source="agent", turn_ids=["t1"])
    again = store.save(
        "The user prefers dark mode.", category="preferences", source="user_stated", turn_ids=["t2"]
    )
    assert again.outcome is SaveOutcome.MERGED
    assert again.fact_id == first.fact_id
    fact = store.get(first.fact_id)  # type: ignore[arg-type]
    assert fact is not None
    assert fact.turn_ids == ["t1", "t2"]
    assert fact.source is FactSource.USER_STATED  # the better source wins
    assert store.status().facts_active == 1


def test_a_changed_value_is_not_taken_for_a_duplicate(store: MemoryStore) -> None:
    store.save("Project Apollo deadline is March 3 2025", category="work", subject="apollo.deadline")
    later = store.save("Project Apollo deadline is March 10 2025", category="work", subject="apollo.deadline")
    assert later.outcome is SaveOutcome.SUPERSEDED


def test_a_newer_fact_on_the_same_subject_supersedes_the_older(store: MemoryStore) -> None:
    old = store.save("The user's favourite colour is blue", category="preferences", source="user_stated")
    new = store.save("The user's favourite colour is green", category="preferences", source="user_stated")
    assert new.outcome is SaveOutcome.SUPERSEDED
    assert new.replaced_id == old.fact_id

    assert texts(store.search("favourite colour")) == ["The user's favourite colour is green"]
    history = store.history(new.fact_id)  # type: ignore[arg-type]
    assert [f.text for f in history] == [
        "The user's favourite colour is blue",
        "The user's favourite colour is green",
    ]
    assert history[0].status is FactStatus.SUPERSEDED
    assert history[0].superseded_by == new.fact_id
    assert history[1].supersedes == old.fact_id
    assert store.status().facts_superseded == 1


def test_an_explicit_subject_key_links_facts_worded_differently(store: MemoryStore) -> None:
    store.save("Home is Lyon", category="user", source="user_stated", subject="user.home_city")
    moved = store.save(
        "The user moved to Rennes in April", category="other", source="user_stated", subject="User.Home_City"
    )
    assert moved.outcome is SaveOutcome.SUPERSEDED
    assert [f.text for f in store.list_facts()] == ["The user moved to Rennes in April"]


def test_different_subject_keys_are_never_merged_by_similarity(store: MemoryStore) -> None:
    store.save("The user likes green tea", category="food", subject="user.tea")
    other = store.save("The user likes green tea a lot", category="food", subject="user.coffee")
    assert other.outcome is SaveOutcome.SAVED


def test_an_inferred_fact_cannot_replace_a_user_stated_one(store: MemoryStore) -> None:
    stated = store.save(
        "The user's locker code is 4512",
        category="personal",
        source="user_stated",
        subject="user.locker_code",
    )
    guessed = store.save(
        "The user's locker code is 9981",
        category="personal",
        source="inferred",
        turn_ids=["t9"],
        subject="user.locker_code",
    )
    assert guessed.outcome is SaveOutcome.CONTRADICTION
    assert guessed.fact_id == stated.fact_id

    assert texts(store.search("locker code")) == ["The user's locker code is 4512"]
    pending = store.contradictions()
    assert len(pending) == 1
    assert pending[0].fact_id == stated.fact_id
    assert pending[0].text == "The user's locker code is 9981"
    assert pending[0].source is FactSource.INFERRED
    assert pending[0].turn_ids == ["t9"]

    # The same claim again is not recorded twice.
    again = store.save(
        "The user's locker code is 9981", category="personal", source="extracted", subject="user.locker_code"
    )
    assert again.contradiction_id == pending[0].id
    assert len(store.contradictions()) == 1


def test_the_operator_can_keep_the_new_side_of_a_contradiction(store: MemoryStore) -> None:
    stated = store.save(
        "The user's locker code is 4512",
        category="personal",
        source="user_stated",
        subject="user.locker_code",
    )
    disputed = store.save(
        "The user's locker code is 9981", category="personal", source="extracted", subject="user.locker_code"
    )
    resolved = store.resolve(disputed.contradiction_id, "new")  # type: ignore[arg-type]
    assert resolved.status is ContradictionStatus.RESOLVED
    assert resolved.resolution == "kept_new"
    assert texts(store.search("locker code")) == ["The user's locker code is 9981"]
    old = store.get(stated.fact_id)  # type: ignore[arg-type]
    assert old is not None and old.status is FactStatus.SUPERSEDED
    assert old.superseded_by == resolved.new_fact_id
    assert store.contradictions() == []
    with pytest.raises(ContradictionNotFound):
        store.resolve(disputed.contradiction_id, "old")  # type: ignore[arg-type]


def test_keeping_the_old_side_bars_the_claim_from_coming_back(store: MemoryStore) -> None:
    store.save(
        "The user's locker code is 4512",
        category="personal",
        source="user_stated",
        subject="user.locker_code",
    )
    disputed = store.save(
        "The user's locker code is 9981", category="personal", source="extracted", subject="user.locker_code"
    )
    store.resolve(disputed.contradiction_id, "old")  # type: ignore[arg-type]
    retried = store.save(
        "The user's locker code is 9981", category="personal", source="extracted", subject="user.locker_code"
    )
    assert retried.outcome is SaveOutcome.BLOCKED
    assert store.contradictions() == []
    assert [c.resolution for c in store.contradictions(ContradictionStatus.RESOLVED)] == ["kept_old"]


def test_forget_erases_the_fact_everywhere_and_leaves_a_barrier(store: MemoryStore, data_dir: Path) -> None:
    first = store.save(
        "The user's locker code is 1234",
        category="personal",
        source="user_stated",
        subject="user.locker_code",
    )
    second = store.save(
        "The user's locker code is 4512",
        category="personal",
        source="user_stated",
        subject="user.locker_code",
    )
    forgotten = store.forget(second.fact_id)  # type: ignore[arg-type]
    assert forgotten == [second.fact_id, first.fact_id]  # the older version goes too

    assert store.search("locker code") == []
    for fact_id in forgotten:
        fact = store.get(fact_id)
        assert fact is not None and fact.status is FactStatus.FORGOTTEN and fact.text == ""
    assert store.query("SELECT COUNT(*) FROM fact_fts")[0][0] == 0
    assert store.query("SELECT COUNT(*) FROM fact_index")[0][0] == 0
    assert store.query("SELECT COUNT(*) FROM fact_embeddings")[0][0] == 0
    raw = (
        sqlite3.connect(data_dir / "memory.db").execute("SELECT group_concat(text) FROM facts").fetchone()[0]
    )
    assert "4512" not in (raw or "")

    for source in ("extracted", "inferred", "agent"):
        blocked = store.save(
            "the user's locker code is 4512.", category="personal", source=source, subject="user.locker_code"
        )
        assert blocked.outcome is SaveOutcome.BLOCKED
    assert store.forget(second.fact_id) == []  # already forgotten


def test_a_person_restating_a_forgotten_fact_lifts_the_barrier(store: MemoryStore) -> None:
    saved = store.save("The user's gym is FitCo", source="user_stated")
    store.forget(saved.fact_id)  # type: ignore[arg-type]
    again = store.save("The user's gym is FitCo", source="user_stated")
    assert again.outcome is SaveOutcome.SAVED
    assert store.status().barriers == 0
    assert texts(store.search("gym")) == ["The user's gym is FitCo"]


def test_forget_dismisses_contradictions_of_the_fact(store: MemoryStore) -> None:
    stated = store.save(
        "The user's locker code is 4512",
        category="personal",
        source="user_stated",
        subject="user.locker_code",
    )
    store.save(
        "The user's locker code is 9981", category="personal", source="inferred", subject="user.locker_code"
    )
    store.forget(stated.fact_id)  # type: ignore[arg-type]
    assert store.contradictions() == []
    assert [c.status for c in store.contradictions(None)] == [ContradictionStatus.DISMISSED]


def test_an_operator_edit_is_a_new_version(store: MemoryStore) -> None:
    saved = store.save("The user lives in Lyon", category="user", source="user_stated", subject="user.home")
    edited = store.edit(saved.fact_id, "The user lives in Grenoble")  # type: ignore[arg-type]
    assert edited.outcome is SaveOutcome.SUPERSEDED
    new = store.get(edited.fact_id)  # type: ignore[arg-type]
    assert new is not None
    assert (new.source, new.subject, new.category) == (FactSource.OPERATOR, "user.home", "user")
    fixed = store.edit(edited.fact_id, "The user lives in Grenoble.")  # type: ignore[arg-type]
    assert fixed.outcome is SaveOutcome.MERGED and fixed.fact_id == edited.fact_id
    assert store.get(edited.fact_id).text == "The user lives in Grenoble."  # type: ignore[union-attr]
    with pytest.raises(FactNotFound):
        store.edit(saved.fact_id, "anything")  # type: ignore[arg-type]


def test_search_ranks_by_vector_and_keyword_and_respects_categories(store: MemoryStore) -> None:
    store.save("The user's cat is named Miso", category="pets")
    store.save("The user's sister is named Clara", category="family")
    store.save("Weekly team meeting is on Tuesdays", category="work")
    hits = store.search("cat named", k=3)
    assert hits[0].fact.text == "The user's cat is named Miso"
    assert hits[0].vector_score > hits[-1].vector_score
    assert hits[0].keyword_score == 1.0
    assert [h.fact.category for h in store.search("named", k=5, category="family")] == ["family"]
    assert store.search("named", category="unknown") == []


def test_search_records_accesses_and_they_boost_with_a_cap(store: MemoryStore) -> None:
    a = store.save("Alpha project uses Rust", category="work")
    b = store.save("Alpha project uses Go", category="work", subject="alpha.other")
    for _ in range(15):
        store.record_access([a.fact_id])  # type: ignore[list-item]
    assert store.get(a.fact_id).access_count == 15  # type: ignore[union-attr]
    hits = store.search("Alpha project", k=2, record_access=False)
    by_id = {hit.fact.id: hit for hit in hits}
    boost = by_id[a.fact_id].score / (
        0.7 * by_id[a.fact_id].vector_score + 0.3 * by_id[a.fact_id].keyword_score
    )
    assert boost == pytest.approx(by_id[a.fact_id].fact.salience * 1.5)  # 10 accesses at most, 5% each
    assert by_id[b.fact_id].fact.access_count == 0


def test_salience_decays_by_pass_down_to_a_floor(store: MemoryStore) -> None:
    saved = store.save("The office wifi is called Hive", source="user_stated")
    store.decay()
    assert store.get(saved.fact_id).salience == pytest.approx(0.95)  # type: ignore[union-attr]
    for _ in range(200):
        store.decay()
    assert store.get(saved.fact_id).salience == pytest.approx(0.05)  # type: ignore[union-attr]


def test_categories_are_searched_first_and_centroids_follow_changes(store: MemoryStore) -> None:
    for text in (
        "The user likes hiking in the Alps",
        "The user likes hiking in Norway",
        "The user likes hiking trails",
    ):
        store.save(text, category="hobbies")
    store.save("Invoice 2291 was paid in full", category="finance")
    hits = store.search("likes hiking", k=2)
    assert {hit.tier for hit in hits} == {"category"}
    assert store.query("SELECT n FROM categories WHERE name = 'hobbies'")[0][0] == 3
    victim = hits[0].fact.id
    store.forget(victim)
    assert store.query("SELECT n FROM categories WHERE name = 'hobbies'")[0][0] == 2
    assert victim not in [hit.fact.id for hit in store.search("likes hiking", k=5)]


def test_episodes_are_searchable_by_words_and_meaning(store: MemoryStore) -> None:
    store.add_episode(
        "2025-05-01T09:00:00Z",
        "2025-05-01T09:40:00Z",
        ["t1", "t2", "t3"],
        "Debugged the billing export with the user",
    )
    store.add_episode("2025-05-02T14:00:00Z", "2025-05-02T15:00:00Z", ["t4"], "Wrote the onboarding guide")
    hits = store.search_episodes("billing export problem")
    assert hits[0].episode.summary == "Debugged the billing export with the user"
    assert hits[0].episode.start == "2025-05-01T09:00:00Z"
    assert [e.summary for e in store.recent_episodes(1)] == ["Wrote the onboarding guide"]
    assert store.search_episodes("zebra migration") == []
    with pytest.raises(MemoryInputError):
        store.add_episode("a", "b", [], "   ")


def test_bad_input_is_refused_with_a_clear_message(store: MemoryStore) -> None:
    with pytest.raises(MemoryInputError, match="empty"):
        store.save("  ... ")
    with pytest.raises(MemoryInputError, match="unknown fact source 'gossip'"):
        store.save("a fact", source="gossip")
    with pytest.raises(VectorError, match="expected 64"):
        store.save("a fact", vector=[0.1] * 3)
    with pytest.raises(MemoryInputError, match="query is empty"):
        store.search("   ")
    with pytest.raises(FactNotFound):
        store.forget(999)
    with pytest.raises(FactNotFound):
        store.save("a fact", supersedes=999)


def test_precomputed_vectors_skip_the_embedder(
    open_store: StoreFactory, embedder: SwitchableEmbedder
) -> None:
    store = open_store()
    calls = embedder.calls
    vector = DeterministicEmbedder(DIMS)(["a fact given with its vector"])[0]
    saved = store.save("a fact given with its vector", vector=vector)
    assert embedder.calls == calls
    assert store.get(saved.fact_id).has_vector  # type: ignore[union-attr]


def test_a_new_embedding_model_re_embeds_every_fact(open_store: StoreFactory, clock: ManualClock) -> None:
    store = open_store()
    store.save("The user's bike is a blue Brompton", category="things")
    store.close()
    other = open_store(
        config=MemoryConfig(dimensions=32, embedding_model="test-32"), embedder=DeterministicEmbedder(32)
    )
    status = other.status()
    assert (status.dimensions, status.embedding_model, status.missing_vectors) == (32, "test-32", 1)
    assert other.backfill_vectors() == 1
    assert texts(other.search("bike")) == ["The user's bike is a blue Brompton"]
    assert other.search("bike")[0].vector_score > 0.3
    assert other.query("SELECT COUNT(*) FROM fact_index")[0][0] == 1


def test_a_reader_with_another_model_keeps_the_vectors_and_searches_by_keyword(
    open_store: StoreFactory,
) -> None:
    store = open_store()
    store.save("The user's bike is a blue Brompton")
    store.close()
    reader = open_store(
        config=MemoryConfig(dimensions=32, embedding_model="other", reindex_on_model_change=False),
        embedder=DeterministicEmbedder(32),
    )
    assert reader.status().mode is MemoryMode.KEYWORD
    assert "keyword-only" in (reader.status().last_error or "")
    assert texts(reader.search("Brompton bike")) == ["The user's bike is a blue Brompton"]
    assert reader.query("SELECT COUNT(*) FROM fact_embeddings")[0][0] == 1

"""Keyword search in Chinese, Japanese and Korean: a word of a fact finds it without any
embedding, in a new file and in one written before the rule."""

from __future__ import annotations

from conftest import StoreFactory

from agent_runtime.memory.scripts import index_text, query_text

FACTS = {
    "花生": "用户对花生过敏。",
    "狗": "用户养了一只叫旺财的狗。",
    "ピーナッツ": "ユーザーはピーナッツアレルギーです。",
    "木曜日": "本番環境へのリリースは木曜日だけです。",
    "커피": "사용자는 아침마다 커피를 마신다.",
}


def test_a_word_of_a_spaceless_fact_finds_it_by_keyword_alone(open_store: StoreFactory) -> None:
    store = open_store(embedder=None)
    for text in [*FACTS.values(), "The user is allergic to peanuts.", "Invoices are approved by Maria."]:
        store.save(text, category="notes")
    for word, text in FACTS.items():
        hits = store.search(word, 3)
        assert hits and hits[0].fact.text == text, (word, [hit.fact.text for hit in hits])
    assert [hit.fact.text for hit in store.search("peanuts", 3)] == ["The user is allergic to peanuts."]


def test_a_file_written_before_the_rule_is_indexed_again_once(open_store: StoreFactory) -> None:
    store = open_store(embedder=None)
    saved = store.save(FACTS["花生"], category="notes")
    with store.transaction() as conn:
        conn.execute("DELETE FROM fact_fts WHERE rowid = ?", (saved.fact_id,))
        conn.execute("INSERT INTO fact_fts(rowid, text) VALUES (?, ?)", (saved.fact_id, FACTS["花生"]))
        conn.execute("DELETE FROM meta WHERE key = 'fts_spaceless_pairs'")
    assert store.search("花生", 3) == []
    store.close()
    reopened = open_store(embedder=None)
    assert [hit.fact.text for hit in reopened.search("花生", 3)] == [FACTS["花生"]]


def test_other_scripts_pass_unchanged() -> None:
    assert index_text("Anna lives in Zürich") == "Anna lives in Zürich"
    assert query_text("花生过敏") == " 花生 生过 过敏 "
    assert index_text("狗") == " 狗 狗 "

"""The tables of memory.db.

Facts keep their text and bookkeeping in `facts`; their float32 embedding in
`fact_embeddings` (the exact vector, used to rescore and to rebuild); a binary-quantized copy
in the sqlite-vec table `fact_index`, partitioned by category, which is what a KNN query within
a category scans (1 bit per dimension: 48 times less to read than float32); an int8 code
per active fact in `fact_codes` (one signed byte per dimension, see vectors.int8_code), from
which the matrix in memory that the search over every fact scans is filled (see quantized.py);
and their words in the FTS5 table `fact_fts`. Only active facts are in `fact_index`,
`fact_codes` and `fact_fts`: superseded and forgotten facts are out of ordinary search by
construction. A fact's `scope` is whose it is: '' for the agent's shared memory, or a person's
principal (`person:CHANNEL:USER`) for what only that person's conversations may recall.
"""

from __future__ import annotations

SCHEMA_VERSION = "2"

TABLES = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS categories (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    n INTEGER NOT NULL DEFAULT 0,
    vec_sum BLOB
);
CREATE TABLE IF NOT EXISTS facts (
    id INTEGER PRIMARY KEY,
    text TEXT NOT NULL,
    content_key TEXT NOT NULL,
    category_id INTEGER NOT NULL REFERENCES categories(id),
    subject TEXT,
    source TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    salience REAL NOT NULL,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at TEXT,
    turn_ids TEXT NOT NULL DEFAULT '[]',
    supersedes INTEGER REFERENCES facts(id),
    superseded_by INTEGER REFERENCES facts(id),
    has_vector INTEGER NOT NULL DEFAULT 0,
    scope TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS facts_by_key ON facts(content_key) WHERE status = 'active';
CREATE INDEX IF NOT EXISTS facts_by_subject ON facts(subject) WHERE status = 'active' AND subject IS NOT NULL;
CREATE INDEX IF NOT EXISTS facts_by_status ON facts(status, id);
CREATE INDEX IF NOT EXISTS facts_missing_vector ON facts(id) WHERE status = 'active' AND has_vector = 0;
CREATE TABLE IF NOT EXISTS fact_codes (
    fact_id INTEGER PRIMARY KEY,
    code BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS fact_embeddings (
    fact_id INTEGER PRIMARY KEY REFERENCES facts(id),
    embedding BLOB NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS fact_fts USING fts5(
    text, tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS episodes (
    id INTEGER PRIMARY KEY,
    start_at TEXT NOT NULL,
    end_at TEXT NOT NULL,
    turn_ids TEXT NOT NULL DEFAULT '[]',
    summary TEXT NOT NULL,
    created_at TEXT NOT NULL,
    embedding BLOB
);
CREATE INDEX IF NOT EXISTS episodes_missing_vector ON episodes(id) WHERE embedding IS NULL;
CREATE VIRTUAL TABLE IF NOT EXISTS episode_fts USING fts5(
    summary, tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS contradictions (
    id INTEGER PRIMARY KEY,
    fact_id INTEGER NOT NULL REFERENCES facts(id),
    text TEXT NOT NULL,
    content_key TEXT NOT NULL,
    category TEXT NOT NULL,
    subject TEXT,
    source TEXT NOT NULL,
    turn_ids TEXT NOT NULL DEFAULT '[]',
    embedding BLOB,
    status TEXT NOT NULL DEFAULT 'pending',
    created_at TEXT NOT NULL,
    resolved_at TEXT,
    resolution TEXT,
    new_fact_id INTEGER REFERENCES facts(id)
);
CREATE INDEX IF NOT EXISTS contradictions_pending ON contradictions(fact_id, content_key) WHERE status = 'pending';
CREATE TABLE IF NOT EXISTS barriers (
    id INTEGER PRIMARY KEY,
    content_key TEXT NOT NULL,
    embedding BLOB,
    fact_id INTEGER,
    reason TEXT NOT NULL,
    created_at TEXT NOT NULL,
    words TEXT
);
CREATE INDEX IF NOT EXISTS barriers_by_key ON barriers(content_key);
CREATE TABLE IF NOT EXISTS review_items (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    target_kind TEXT NOT NULL,
    target_ref TEXT NOT NULL,
    detail TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'open',
    created_at TEXT NOT NULL,
    closed_at TEXT
);
CREATE INDEX IF NOT EXISTS review_open ON review_items(target_kind, target_ref) WHERE status = 'open';
CREATE TABLE IF NOT EXISTS job_checkpoints (
    job TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS job_runs (
    id INTEGER PRIMARY KEY,
    job TEXT NOT NULL,
    trigger TEXT NOT NULL,
    model TEXT,
    input_from TEXT,
    input_to TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    outcome TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '',
    changes TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS job_runs_by_job ON job_runs(job, id);
"""


def vector_index(dims: int) -> str:
    return (
        "CREATE VIRTUAL TABLE IF NOT EXISTS fact_index USING vec0("
        f"embedding bit[{dims}], category_id integer partition key)"
    )

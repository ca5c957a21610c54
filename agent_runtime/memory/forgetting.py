"""Forgetting that reaches what was derived from a fact, down to the bytes.

When a fact is forgotten (`MemoryStore.forget`), the store erases its text and takes it out of
every index; this module finds the copies of it that other records hold, inside the same
transaction:
- episodes (compaction summaries): each sentence that states the fact becomes "(forgotten)",
  the keyword index is rebuilt for the episode and its embedding recomputed later (the raw
  turns stay in history/ for the operator);
- the run records of the maintenance jobs and the review flags, whose details quote facts;
- pending contradictions whose claim states the fact.
The barrier it leaves keeps a fingerprint of the fact's distinctive words and of its values
(`barred_values`: numbers, codes, names), as keyed hashes, not the words, so that text saved
elsewhere that states the fact, such as a MEMORY.md line the consolidation job has not
rewritten yet or an agent's save in other words, is recognised (`ForgottenMatcher`), kept out
of search results and refused.

"States" is `provenance.states`: every word of the fact holding a digit, and most of its other
distinctive words, are in the sentence.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_runtime.memory.barred_values import ValuePrint, Values, restates, value_print
from agent_runtime.memory.provenance import distinctive_words, states
from agent_runtime.memory.sqlite import Connection
from agent_runtime.memory.text import content_words, fts_query, words
from agent_runtime.workspace.versioned import WORKSPACE_FILES, Workspace

SALT_KEY = "barrier_salt"
FORGOTTEN = "(forgotten)"
# Share of a fact's words (besides those with digits) a sentence must hold to state it.
STATEMENT_SHARE = 0.75
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n")


def salt(conn: Connection) -> bytes:
    """The key of the fingerprints' hashes, made once per memory.db."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (SALT_KEY,)).fetchone()
    if row is not None:
        return bytes.fromhex(str(row[0]))
    made = secrets.token_bytes(16)
    conn.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (SALT_KEY, made.hex()))
    return made


def _hash(key: bytes, word: str) -> str:
    return hmac.new(key, word.encode("utf-8"), hashlib.sha256).hexdigest()[:16]


def fingerprint(text: str, key: bytes) -> str:
    """The JSON fingerprint stored with a barrier: hashed words, those with digits apart, and
    the hashed values (`barred_values`)."""
    wanted = distinctive_words(text)
    numbers = sorted(_hash(key, w) for w in wanted if any(ch.isdigit() for ch in w))
    others = sorted(_hash(key, w) for w in wanted if not any(ch.isdigit() for ch in w))
    values = value_print(text, lambda value: _hash(key, value))
    return json.dumps({"n": numbers, "w": others, "v": values.model_dump()})


@dataclass(frozen=True)
class _Print:
    barrier: int
    numbers: frozenset[str]
    others: frozenset[str]
    values: ValuePrint | None

    def stated_by(self, said: set[str], values: Values) -> bool:
        if self.values is not None and restates(self.values, values, bool(self.others & said)):
            return True
        if not (self.numbers or self.others) or not self.numbers <= said:
            return False
        return not self.others or len(self.others & said) >= STATEMENT_SHARE * len(self.others)


class ForgottenMatcher:
    """Recognises text that states a forgotten fact, from the barriers' fingerprints."""

    def __init__(self, key: bytes, prints: Sequence[_Print]) -> None:
        self.key = key
        self.prints = list(prints)

    @classmethod
    def load(cls, conn: Connection) -> ForgottenMatcher:
        prints = []
        for barrier, raw in conn.execute("SELECT id, words FROM barriers WHERE words IS NOT NULL").fetchall():
            loaded = json.loads(raw)
            values = ValuePrint.model_validate(loaded["v"]) if "v" in loaded else None
            prints.append(
                _Print(int(barrier), frozenset(loaded.get("n", [])), frozenset(loaded.get("w", [])), values)
            )
        return cls(salt(conn) if prints else b"", prints)

    def __bool__(self) -> bool:
        return bool(self.prints)

    def states_forgotten(self, text: str) -> bool:
        return bool(self.barriers_stated(text))

    def barriers_stated(self, text: str) -> list[int]:
        """The barriers whose forgotten fact the text states, in any wording."""
        if not self.prints:
            return []
        said = {_hash(self.key, word) for word in content_words(text)}
        values = Values.of(text).hashed(lambda value: _hash(self.key, value))
        return [p.barrier for p in self.prints if p.stated_by(said, values)]


def states_any(sentence: str, facts: Iterable[str]) -> bool:
    return any(states(sentence, fact, STATEMENT_SHARE) for fact in facts)


def redact_statements(text: str, facts: Sequence[str]) -> tuple[str, int]:
    """The text with each sentence that states one of the facts replaced by "(forgotten)"."""
    pieces = _SENTENCE_END.split(text)
    separators = _SENTENCE_END.findall(text)
    changed = 0
    for number, piece in enumerate(pieces):
        if piece.strip() and piece.strip() != FORGOTTEN and states_any(piece, facts):
            pieces[number] = FORGOTTEN
            changed += 1
    if not changed:
        return text, 0
    out = pieces[0]
    for separator, piece in zip(separators, pieces[1:], strict=True):
        out += separator + piece
    return out, changed


def scrub_derived(conn: Connection, facts: Sequence[str], fact_ids: Sequence[int]) -> list[str]:
    """Redact the forgotten facts from every record derived from them; what was changed."""
    facts = [fact for fact in facts if fact.strip()]
    if not facts:
        return []
    changes = _scrub_episodes(conn, facts)
    changes += _scrub_records(conn, facts, fact_ids)
    return changes


def _scrub_episodes(conn: Connection, facts: Sequence[str]) -> list[str]:
    expression = fts_query(" ".join(" ".join(sorted(distinctive_words(fact))) for fact in facts))
    if expression is None:
        return []
    rows = conn.execute(
        "SELECT e.id, e.summary FROM episode_fts JOIN episodes e ON e.id = episode_fts.rowid "
        "WHERE episode_fts MATCH ?",
        (expression,),
    ).fetchall()
    changes = []
    for episode_id, summary in rows:
        redacted, count = redact_statements(str(summary), facts)
        if not count:
            continue
        conn.execute("UPDATE episodes SET summary = ?, embedding = NULL WHERE id = ?", (redacted, episode_id))
        conn.execute("DELETE FROM episode_fts WHERE rowid = ?", (episode_id,))
        conn.execute("INSERT INTO episode_fts(rowid, summary) VALUES (?, ?)", (episode_id, redacted))
        changes.append(f"episode {episode_id}: {count} sentence(s)")
    if changes:
        conn.execute("INSERT INTO episode_fts(episode_fts) VALUES ('optimize')")
    return changes


def _longest_word(fact: str) -> str:
    return max(words(fact), key=len, default="")


def _scrub_records(conn: Connection, facts: Sequence[str], fact_ids: Sequence[int]) -> list[str]:
    """Job run records, review flags and pending claims that quote a forgotten fact."""
    changes = []
    ids = [str(fact_id) for fact_id in fact_ids]
    conn.execute(
        "UPDATE review_items SET detail = ? WHERE target_kind = 'fact' AND target_ref IN "
        "(SELECT value FROM json_each(?))",
        (FORGOTTEN, json.dumps(ids)),
    )
    for probe in {_longest_word(fact) for fact in facts if _longest_word(fact)}:
        pattern = f"%{probe}%"
        # Run records keep their changes as ASCII-escaped JSON ("Z\u00fcrich").
        escaped = f"%{json.dumps(probe)[1:-1]}%"
        for row_id, detail in conn.execute(
            "SELECT id, detail FROM review_items WHERE detail LIKE ?", (pattern,)
        ).fetchall():
            if states_any(str(detail), facts):
                conn.execute("UPDATE review_items SET detail = ? WHERE id = ?", (FORGOTTEN, row_id))
                changes.append(f"review item {row_id}")
        for row_id, detail, raw in conn.execute(
            "SELECT id, detail, changes FROM job_runs WHERE changes LIKE ? OR changes LIKE ? OR detail LIKE ?",
            (pattern, escaped, pattern),
        ).fetchall():
            entries = [FORGOTTEN if states_any(str(e), facts) else str(e) for e in json.loads(raw or "[]")]
            cleaned_detail = FORGOTTEN if states_any(str(detail), facts) else str(detail)
            conn.execute(
                "UPDATE job_runs SET changes = ?, detail = ? WHERE id = ?",
                (json.dumps(entries), cleaned_detail, row_id),
            )
            changes.append(f"job run {row_id}")
        for row_id, text in conn.execute(
            "SELECT id, text FROM contradictions WHERE status = 'pending' AND text LIKE ?", (pattern,)
        ).fetchall():
            if states_any(str(text), facts):
                conn.execute(
                    "UPDATE contradictions SET status = 'dismissed', text = ?, embedding = NULL WHERE id = ?",
                    (FORGOTTEN, row_id),
                )
                changes.append(f"contradiction {row_id}")
    return changes


def scrub(text: str, facts: Sequence[str]) -> str:
    """The text with each sentence that states one of the facts replaced by "(forgotten)"."""
    return redact_statements(text, facts)[0] if text else text


def scrub_lines(text: str, facts: Sequence[str]) -> str:
    """A markdown text without the bullet lines that state a fact, other sentences scrubbed."""
    kept = []
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith(("- ", "* ")) and states_any(line, facts):
            continue
        body = line.rstrip("\n")
        cleaned = scrub(body, facts)
        kept.append(cleaned + line[len(body) :])
    return "".join(kept)


def probes(facts: Sequence[str]) -> list[str]:
    """For each fact, its rarest-looking word (the longest distinctive one), lowercased: a file
    that holds none of them states none of the facts."""
    found = []
    for fact in facts:
        wanted = sorted(
            distinctive_words(fact), key=lambda word: (-any(c.isdigit() for c in word), -len(word))
        )
        if wanted:
            found.append(wanted[0].lower())
    return found


def mentions_probe(text: str, wanted: Sequence[str]) -> bool:
    lowered = text.lower()
    return any(probe in lowered or json.dumps(probe)[1:-1] in lowered for probe in wanted)


def forget_in_versions(workspace: Workspace, texts: Sequence[str]) -> int:
    """Rewrite the kept versions of each workspace file that state one of the texts (without
    those lines), in the agent's storage or the operator's copy; how many versions changed."""
    wanted = probes(texts)
    if not wanted:
        return 0

    def rewrite(text: str) -> str:
        return scrub_lines(text, texts) if mentions_probe(text, wanted) else text

    return sum(workspace.rewrite_versions(name, rewrite) for name in WORKSPACE_FILES)


def scrub_json(value: Any, facts: Sequence[str]) -> Any:
    """Every string of a JSON value scrubbed; a string holding JSON (tool-call arguments) is
    scrubbed inside, so it stays JSON."""
    if isinstance(value, str):
        stripped = value.lstrip()
        if stripped[:1] in ("{", "[") and states_any(value, facts):
            try:
                inner = json.loads(value)
            except json.JSONDecodeError:
                return scrub(value, facts)
            return json.dumps(scrub_json(inner, facts), ensure_ascii=False)
        return scrub(value, facts)
    if isinstance(value, list):
        return [scrub_json(item, facts) for item in value]
    if isinstance(value, dict):
        return {key: scrub_json(item, facts) for key, item in value.items()}
    return value


def scrub_forgotten(text: str, facts: Sequence[str]) -> str:
    """A message's text or a tool call's arguments, scrubbed (`scrub_json` on one string)."""
    return str(scrub_json(text, facts))

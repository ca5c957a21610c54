"""The memory tools the agent's model calls: memory_save, memory_search, memory_forget.

`MemoryTools` holds the store, the workspace index and the daily log; `tool_specs()` gives the
OpenAI tool schemas and `handlers()` functions taking the parsed arguments and returning the
JSON text fed back to the model. Bad arguments raise `ToolInputError` (a ValueError) with a
message naming the argument.

memory_search merges three sources, facts (the store), episodes (compacted conversation) and
workspace files (BM25), by reciprocal rank fusion: each source ranks its own results with its
own score, and a result's fused score is the sum of 1 / (60 + rank) over the sources, which
needs no common scale between a cosine and a BM25 score. Every result says where it came from.
With `history` or `as_of` it answers questions about the past instead: facts only, with their
earlier versions (or those current at that time) and when each was valid (`timeline`).

What the model calls (`call`, `handlers`) is not trusted with provenance: the source of a fact it
saves is stamped by `provenance.PersonWords` (a person's word only when a person's message
states it), and it forgets a person's fact only when a person asked for it. The Python methods
(`memory_save`, `memory_forget`) are the runtime's own, trusted entry points.

Scopes: while the runtime works on an item from a sender that may not write the agent's shared
memory (`converse_with`), what is saved goes to that sender's scope (its principal), and a
search finds the shared facts plus that scope's, never another's. MEMORY.md and the salient
facts hold shared facts only: they are in every conversation's prompt.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent_runtime.memory.bm25 import FileHit, WorkspaceIndex
from agent_runtime.memory.factlog import FactLog
from agent_runtime.memory.models import EpisodeHit, FactHit, FactSource, MemoryMode, SaveOutcome
from agent_runtime.memory.provenance import PersonWords
from agent_runtime.memory.store import MemoryStore
from agent_runtime.memory.text import content_key, one_line
from agent_runtime.memory.timeline import search_versions, utc
from agent_runtime.safety.redaction import redacted_note

RRF_K = 60
FORGET_SIMILARITY = 0.8
SOURCE_ORDER = {"fact": 0, "episode": 1, "file": 2}
SNIPPET_CHARS = 500


class ToolInputError(ValueError):
    """The model's arguments to a memory tool are unusable; the message says which and why."""


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SaveArgs(_Args):
    text: str = Field(min_length=1)
    category: str | None = None
    subject: str | None = None
    source: Literal["user_stated", "agent", "inferred"] = "agent"
    turn_ids: list[str] = Field(default_factory=list)


class SearchArgs(_Args):
    query: str = Field(min_length=1)
    k: int = Field(default=8, ge=1, le=50)
    history: bool = False
    as_of: AwareDatetime | None = None

    @field_validator("as_of", mode="before")
    @classmethod
    def _utc_unless_said(cls, value: object) -> object:
        return utc(value) if isinstance(value, str) and value.strip() else value


class ForgetArgs(_Args):
    id: int | None = None
    query: str | None = None
    with_restatements: bool = False


SAVE_SPEC: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "memory_save",
        "description": (
            "Save one durable fact to long-term memory (one fact per call, a full sentence). "
            "A fact on a subject already stored replaces the older one when it comes from an equal or "
            "better source; a repeat only reinforces the stored fact. Credentials (keys, tokens, "
            "passwords) are redacted before saving: leave them out."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The fact, e.g. 'The user's home city is Lyon.'"},
                "category": {"type": "string", "description": "A short topic, e.g. 'preferences', 'people'"},
                "subject": {
                    "type": "string",
                    "description": "A stable key for what the fact is about, e.g. 'user.home_city'; a newer "
                    "fact with the same key replaces the older one",
                },
                "source": {
                    "type": "string",
                    "enum": ["user_stated", "agent", "inferred"],
                    "description": "user_stated: the user said it (kept only when a message of the user "
                    "states it in these words; otherwise recorded as agent); agent: you decided to note "
                    "it; inferred: your guess. Default agent.",
                },
            },
            "required": ["text"],
            "additionalProperties": False,
        },
    },
}
SEARCH_SPEC: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "memory_search",
        "description": (
            "Search long-term memory: saved facts, summaries of earlier conversation (episodes) and "
            "the workspace's markdown files. Each result says where it came from."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for, in words"},
                "k": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many results (8)"},
                "history": {
                    "type": "boolean",
                    "description": "Also the facts' earlier versions, each with when it was valid",
                },
                "as_of": {
                    "type": "string",
                    "description": "A date or time (ISO 8601): the facts as they were then",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}
FORGET_SPEC: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "memory_forget",
        "description": (
            "Forget a fact for good (it will not be learned again from old conversation). Give its id "
            "from memory_search, or a query: the fact is forgotten only when one clearly matches; "
            "otherwise the candidates are returned. A fact a person stated is forgotten only when a "
            "person asked for it."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"type": "integer", "description": "The fact's id (the number in 'fact:N')"},
                "query": {"type": "string", "description": "The fact's wording, when the id is unknown"},
                "with_restatements": {
                    "type": "boolean",
                    "description": "Also forget the other facts that restate it (listed in the answer "
                    "as restatements). Default false.",
                },
            },
            "additionalProperties": False,
        },
    },
}


def _parse(model: type[_Args], arguments: dict[str, Any] | str | None) -> Any:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as bad:
            raise ToolInputError(f"arguments are not valid JSON: {bad.msg} at position {bad.pos}") from None
    try:
        return model.model_validate(arguments or {})
    except ValidationError as bad:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in bad.errors()
        )
        raise ToolInputError(problems) from None


class MemoryTools:
    def __init__(
        self,
        store: MemoryStore,
        workspace_index: WorkspaceIndex | None = None,
        fact_log: FactLog | None = None,
        people: PersonWords | None = None,
    ) -> None:
        self.store = store
        self.workspace_index = workspace_index
        self.fact_log = fact_log if fact_log is not None else store.fact_log
        self.people = people if people is not None else PersonWords()
        self.write_scope = ""
        self.read_scopes: tuple[str, ...] | None = None
        """None: every scope (the runtime's own callers, before any item)."""

    def converse_with(self, principal: str, shares: bool) -> None:
        """Work on an item from `principal` next: into the shared scope when that sender `shares`
        (the agent's admission rule), else into its own; recall: shared plus its own."""
        own = "" if shares else principal
        self.write_scope = own
        self.read_scopes = ("", own) if own else ("",)
        self.people.speaker = principal if principal.startswith("person:") else ""

    @staticmethod
    def tool_specs() -> list[dict[str, Any]]:
        return [SAVE_SPEC, SEARCH_SPEC, FORGET_SPEC]

    def handlers(self) -> dict[str, Callable[[dict[str, Any]], str]]:
        return {
            "memory_save": lambda args: json.dumps(self.call("memory_save", args), ensure_ascii=False),
            "memory_search": lambda args: json.dumps(self.call("memory_search", args), ensure_ascii=False),
            "memory_forget": lambda args: json.dumps(self.call("memory_forget", args), ensure_ascii=False),
        }

    def call(self, name: str, arguments: dict[str, Any] | str | None) -> dict[str, Any]:
        """Run a tool by name with the model's arguments (a dict or its JSON text)."""
        if name == "memory_save":
            save = _parse(SaveArgs, arguments)
            stamp = self.people.stamp(save.text, save.source)
            result = self.memory_save(save.text, save.category, stamp.source, save.turn_ids, save.subject)
            if stamp.note:
                result["message"] += f"; {stamp.note}"
            return result
        if name == "memory_search":
            search = _parse(SearchArgs, arguments)
            if search.history or search.as_of is not None:
                return self.memory_history(search.query, search.k, search.as_of)
            return self.memory_search(search.query, search.k)
        if name == "memory_forget":
            forget = _parse(ForgetArgs, arguments)
            return self.memory_forget(
                forget.id, forget.query, asked_by_model=True, with_restatements=forget.with_restatements
            )
        raise ToolInputError(f"unknown memory tool {name!r}: use memory_save, memory_search or memory_forget")

    # The tools

    def memory_save(
        self,
        text: str,
        category: str | None = None,
        source: FactSource | str = FactSource.AGENT,
        turn_ids: list[str] | None = None,
        subject: str | None = None,
    ) -> dict[str, Any]:
        result = self.store.save(
            text,
            category=category,
            source=source,
            turn_ids=turn_ids or [],
            subject=subject,
            scope=self.write_scope,
        )
        saved = result.outcome in (SaveOutcome.SAVED, SaveOutcome.SUPERSEDED)
        if saved and result.fact_id is not None and self.fact_log is not None and not self.write_scope:
            fact = self.store.get(result.fact_id)
            if fact is not None:
                self.fact_log.append(fact)
        messages = {
            SaveOutcome.SAVED: f"saved as fact:{result.fact_id}",
            SaveOutcome.MERGED: f"already known as fact:{result.fact_id}; reinforced",
            SaveOutcome.SUPERSEDED: f"saved as fact:{result.fact_id}, replacing fact:{result.replaced_id}",
            SaveOutcome.CONTRADICTION: f"not saved: it contradicts fact:{result.fact_id}, which comes from a "
            f"more trusted source; recorded for the operator as contradiction {result.contradiction_id}",
            SaveOutcome.BLOCKED: "not saved: this fact was deliberately forgotten",
        }
        message = messages[result.outcome]
        if result.redacted:
            message += f"; {redacted_note(tuple(result.redacted))}"
        saved_as = self.store.get(result.fact_id) if saved and result.fact_id is not None else None
        return {
            "status": result.outcome.value,
            "id": result.fact_id,
            "replaced": result.replaced_id if result.outcome is SaveOutcome.SUPERSEDED else None,
            "provenance": saved_as.source.value if saved_as is not None else None,
            "message": message,
        }

    def memory_search(self, query: str, k: int = 8) -> dict[str, Any]:
        if not query.strip():
            raise ToolInputError("query: give at least one word to search for")
        facts = self.store.search(query, k, scopes=self.read_scopes)
        found_episodes = self.store.search_episodes(query, k)
        files = self._file_hits(query, k)
        ranked: list[tuple[float, int, dict[str, Any]]] = []
        for position, fact in enumerate(facts):
            ranked.append((1 / (RRF_K + position + 1), SOURCE_ORDER["fact"], self._fact_result(fact)))
        for position, episode in enumerate(found_episodes):
            ranked.append(
                (1 / (RRF_K + position + 1), SOURCE_ORDER["episode"], self._episode_result(episode))
            )
        for position, passage in enumerate(files):
            ranked.append((1 / (RRF_K + position + 1), SOURCE_ORDER["file"], self._file_result(passage)))
        ranked.sort(key=lambda item: (-item[0], item[1]))
        return {"mode": self.store.embeddings.mode.value, "results": [item[2] for item in ranked[:k]]}

    def memory_history(self, query: str, k: int = 8, as_of: datetime | None = None) -> dict[str, Any]:
        """Facts with their earlier versions (or those current at `as_of`), each with its
        validity interval (`timeline`)."""
        versions = search_versions(self.store, query, k, as_of=as_of, scopes=self.read_scopes)
        results = [
            {
                **self._fact_result(FactHit(fact=version.fact, score=version.score)),
                "valid_from": version.valid_from.isoformat(),
                "valid_until": version.valid_until.isoformat() if version.valid_until else None,
                "replaced_by": f"fact:{version.replaced_by}" if version.replaced_by else None,
                "current": version.current,
            }
            for version in versions
        ]
        return {"mode": self.store.embeddings.mode.value, "results": results}

    def memory_forget(
        self,
        fact_id: int | None = None,
        query: str | None = None,
        *,
        asked_by_model: bool = False,
        with_restatements: bool = False,
    ) -> dict[str, Any]:
        """Forget a fact by id, or the one fact that clearly matches `query`, and with
        `with_restatements` the facts restating it. When the model asks, a fact a person stated
        is forgotten only if a person asked for it. The answer never repeats the text."""
        if fact_id is None and not (query and query.strip()):
            raise ToolInputError("give the fact's id, or a query describing it")
        if fact_id is None:
            assert query is not None
            hits = self.store.search(query, 3, record_access=False, scopes=self.read_scopes)
            best = hits[0] if hits else None
            if best is None or not self._clear_match(query, best, hits):
                return {
                    "status": "ambiguous",
                    "ids": [],
                    "candidates": [{"id": hit.fact.id, "text": hit.fact.text} for hit in hits],
                    "message": "no single fact clearly matches; call memory_forget with one of the "
                    "candidates' ids",
                }
            fact_id = best.fact.id
        refusal = self._person_fact_refusal(fact_id) if asked_by_model else None
        if refusal is None and asked_by_model:
            refusal = self._other_scope_refusal(fact_id)
        if refusal is not None:
            return refusal

        def allowed(other: int) -> bool:
            return not asked_by_model or self._person_fact_refusal(other) is None

        result = self.store.forget_all(fact_id, with_restatements=with_restatements, allowed=allowed)
        message = f"forgot fact:{fact_id} ({len(result.forgotten)} fact version(s) in all)"
        if result.restatements:
            listed = ", ".join(f"fact:{other}" for other in result.restatements)
            message += (
                f"; still kept, restating it: {listed} (call again with with_restatements to forget them)"
            )
        return {
            "status": "forgotten",
            "ids": result.forgotten,
            "restatements": result.restatements,
            "message": message,
        }

    # Helpers

    def _other_scope_refusal(self, fact_id: int) -> dict[str, Any] | None:
        """The model may forget only what this conversation can see."""
        fact = self.store.get(fact_id)
        if fact is None or self.read_scopes is None or fact.scope in self.read_scopes:
            return None
        return {"status": "refused", "ids": [], "message": f"no fact:{fact_id} in this conversation's memory"}

    def _person_fact_refusal(self, fact_id: int) -> dict[str, Any] | None:
        """The answer refusing the model's forget of a person's fact no person asked to forget."""
        fact = self.store.get(fact_id)
        if fact is None or fact.source not in (FactSource.USER_STATED, FactSource.OPERATOR):
            return None
        if self.people.asked_to_forget(fact.text, fact.id):
            return None
        return {
            "status": "refused",
            "ids": [],
            "message": f"not forgotten: fact:{fact.id} was stated by a person ({fact.source.value}) and no "
            "recent message of a person asks to forget it; the operator can (flotilla memory forget)",
        }

    def _clear_match(self, query: str, best: FactHit, hits: list[FactHit]) -> bool:
        if content_key(query) == content_key(best.fact.text):
            return True
        if self.store.embeddings.mode is MemoryMode.HYBRID:
            return best.vector_score >= FORGET_SIMILARITY
        runner_up = hits[1].score if len(hits) > 1 else 0.0
        return best.keyword_score >= 1.0 and runner_up < 0.5 * best.score

    def _file_hits(self, query: str, k: int) -> list[FileHit]:
        if self.workspace_index is None:
            return []
        hits = self.workspace_index.search(query, k)
        barred = self._barred_lines(hits)
        kept = []
        for hit in hits:
            lines = [line for line in hit.text.splitlines() if line not in barred]
            if any(line.strip() for line in lines):
                kept.append(hit.model_copy(update={"text": "\n".join(lines)}))
        return kept

    def _barred_lines(self, hits: list[FileHit]) -> set[str]:
        """Lines of these passages that state a forgotten fact (MEMORY.md may lag behind a forget):
        in the same words, or holding its distinctive words (`forgetting.ForgottenMatcher`)."""
        matcher = self.store.forgotten_matcher()
        barred = {
            line
            for hit in hits
            for line in hit.text.splitlines()
            if line.strip() and matcher.states_forgotten(line)
        }
        return barred | self._lines_with_barred_keys(hits)

    def _lines_with_barred_keys(self, hits: list[FileHit]) -> set[str]:
        by_key: dict[str, list[str]] = {}
        for hit in hits:
            for line in hit.text.splitlines():
                if line.strip():
                    by_key.setdefault(content_key(line.lstrip("-*# ").strip()), []).append(line)
        if not by_key:
            return set()
        rows = self.store.query(
            "SELECT content_key FROM barriers WHERE content_key IN (SELECT value FROM json_each(?))",
            (json.dumps(list(by_key)),),
        )
        return {line for row in rows for line in by_key[row[0]]}

    @staticmethod
    def _fact_result(hit: FactHit) -> dict[str, Any]:
        fact = hit.fact
        return {
            "from": "fact",
            "ref": f"fact:{fact.id}",
            "text": fact.text,
            "category": fact.category,
            "provenance": fact.source.value,
            "saved": fact.updated_at.date().isoformat(),
            "score": round(hit.score, 4),
        }

    @staticmethod
    def _episode_result(hit: EpisodeHit) -> dict[str, Any]:
        episode = hit.episode
        return {
            "from": "episode",
            "ref": f"episode:{episode.id}",
            "text": one_line(episode.summary, SNIPPET_CHARS),
            "period": f"{episode.start} .. {episode.end}",
            "turns": len(episode.turn_ids),
            "score": round(hit.score, 4),
        }

    @staticmethod
    def _file_result(hit: FileHit) -> dict[str, Any]:
        return {
            "from": "file",
            "ref": f"workspace/{hit.path}:{hit.start_line}-{hit.end_line}",
            "text": hit.text,
            "score": round(hit.score, 4),
        }

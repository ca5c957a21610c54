"""A category for a fact saved without one, so the category tier of search has something to work
with (facts flushed from the context arrive without a category).

In order:
1. a stored fact on the same subject (cosine >= `subject_similarity`, any category) lends its
   category, so the store's same-subject rules (which compare facts within a category) still
   see the two together;
2. the category whose centroid (the sum of its members' vectors) is nearest to the fact's
   embedding, when it is at least `auto_category_similarity` close and has at least
   `MIN_MEMBERS` members;
3. keyword rules over the fact's words (below);
4. "general".
"""

from __future__ import annotations

from agent_runtime.memory.index import DEFAULT_CATEGORY, FactIndex
from agent_runtime.memory.models import MemoryConfig
from agent_runtime.memory.text import content_words

MIN_MEMBERS = 3


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Category -> words (as `text.content_words` normalizes them: lower case, final "s" dropped).
KEYWORDS: dict[str, frozenset[str]] = {
    "preferences": _words(
        "prefer like love hate dislike favourite favorite enjoy rather want wish fan avoid"
    ),
    "people": _words(
        "name wife husband partner friend colleague boss mother father mum mom dad son daughter brother "
        "sister manager child kid family neighbour neighbor cousin called"
    ),
    "schedule": _words(
        "meeting appointment deadline tomorrow monday tuesday wednesday thursday friday saturday sunday "
        "calendar birthday anniversary weekly daily due schedule reminder"
    ),
    "places": _words("live city address home office moved located country town street flat apartment"),
    "work": _words("job work employer company role salary client customer career position hired"),
    "projects": _words(
        "project repo repository release build deploy feature bug ticket sprint milestone roadmap launch"
    ),
    "health": _words(
        "doctor dentist allergy allergic medication diet vegetarian vegan health sleep gym exercise"
    ),
    "accounts": _words("account login username email bank billing subscription plan invoice payment card"),
}


def by_keywords(text: str) -> str | None:
    said = set(content_words(text))
    best, hits = None, 0
    for category, keywords in KEYWORDS.items():
        found = len(said & keywords)
        if found > hits:
            best, hits = category, found
    return best


def choose(index: FactIndex, text: str, vector: bytes | None, config: MemoryConfig) -> str:
    """The category for a fact saved without one (see the module docstring)."""
    if vector is not None:
        nearest = index.nearest(vector, 1)
        if nearest and nearest[0][1] >= config.subject_similarity:
            row = index.conn.execute(
                "SELECT c.name FROM facts f JOIN categories c ON c.id = f.category_id WHERE f.id = ?",
                (nearest[0][0],),
            ).fetchone()
            if row is not None:
                return str(row[0])
        row = index.conn.execute(
            "SELECT name, 1.0 - vec_distance_cosine(vec_sum, ?) AS similarity FROM categories "
            "WHERE n >= ? AND name != ? AND vec_sum IS NOT NULL AND similarity IS NOT NULL "
            "ORDER BY similarity DESC LIMIT 1",
            (vector, MIN_MEMBERS, DEFAULT_CATEGORY),
        ).fetchone()
        if row is not None and float(row[1]) >= config.auto_category_similarity:
            return str(row[0])
    return by_keywords(text) or DEFAULT_CATEGORY

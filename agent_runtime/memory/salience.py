"""The most salient facts of the store, for the initial context, within a token budget.

The agent sees MEMORY.md in every prompt; the store's facts it sees only when it searches. The
few facts that matter most (a person's word, reinforced, often used) are worth their tokens in
the prompt too: they are picked by salience, then by use, then by age, up to `budget_tokens`,
leaving out those MEMORY.md already states.

The block sits in the memory system message, which the prompt keeps before every turn. So that
it does not break the cached prefix from one request to the next, it lists the facts in id
order (a new fact changes the block at its own line, not the order of the others) and the
runtime computes it once per inbox item, not once per model call.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent_runtime.memory.store import MemoryStore
from agent_runtime.memory.text import content_key, one_line

CHARS_PER_TOKEN = 4
DEFAULT_BUDGET_TOKENS = 300
MIN_SALIENCE = 0.6
MAX_FACT_CHARS = 240
CANDIDATES = 200
HEADING = "## Salient facts (long-term memory; search it for more)"


def salient_block(
    store: MemoryStore,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
    known_lines: Iterable[str] = (),
    min_salience: float = MIN_SALIENCE,
) -> str:
    """The markdown block of salient facts, or "" when none qualifies."""
    budget = budget_tokens * CHARS_PER_TOKEN - len(HEADING) - 1
    known = {content_key(line.lstrip("-*+ ").strip()) for line in known_lines if line.strip()}
    rows = store.query(
        "SELECT id, text, source, content_key FROM facts WHERE status = 'active' AND scope = '' "
        "AND salience >= ? "
        "ORDER BY salience DESC, access_count DESC, id DESC LIMIT ?",
        (min_salience, CANDIDATES),
    )
    chosen: list[tuple[int, str]] = []
    for row in rows:
        if row["content_key"] in known:
            continue
        line = f"- {one_line(row['text'], MAX_FACT_CHARS)} ({row['source']})"
        if len(line) + 1 > budget:
            break
        budget -= len(line) + 1
        chosen.append((int(row["id"]), line))
    if not chosen:
        return ""
    return "\n".join([HEADING, *(line for _, line in sorted(chosen))])

"""Forgetting reaches the `checkpoint` strategy's files: a line of WORKING_MEMORY.md, facts.md,
preferences.md or projects.md that states a forgotten fact is removed, as is a review flag that
quotes one. The transcript in history/ stays, for the operator, as in the `compact` strategy."""

from __future__ import annotations

from collections.abc import Sequence

from agent_runtime.cognition.files import SEMANTIC_FILES, CognitionFiles, Review
from agent_runtime.memory.forgetting import states_any


def forget_in_files(files: CognitionFiles, facts: Sequence[str]) -> list[str]:
    """Remove what states the forgotten facts; the files changed."""
    facts = [fact for fact in facts if fact.strip()]
    if not facts:
        return []
    changed = []
    for path in [files.working_memory, *(files.semantic_dir / name for name in SEMANTIC_FILES)]:
        text = files.read(path)
        kept = [line for line in text.splitlines() if not (line.startswith("- ") and states_any(line, facts))]
        if text and files.write(path, "\n".join(kept) + "\n"):
            changed.append(files.relative(path))
    review = files.review()
    flags = [flag for flag in review.flags if not states_any(flag.line, facts)]
    if len(flags) != len(review.flags):
        files.write(files.review_path, Review(at=review.at, flags=flags).model_dump_json(indent=1))
        changed.append(files.relative(files.review_path))
    return changed

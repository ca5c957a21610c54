"""Wrong names in one wording: a name that is no agent of the fleet, whichever command or route
was given it, and a field fleet.yaml does not know; each with the nearest right name offered
when one is close."""

from __future__ import annotations

import difflib
from collections.abc import Collection

# A fleet of a thousand agents is not listed whole in a one-line error.
LISTED_NAMES = 10


def did_you_mean(word: str, candidates: Collection[str]) -> str:
    """' (did you mean 'alpha'?)' when one candidate is close to `word`, else ''."""
    close = difflib.get_close_matches(word, sorted(candidates), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_agent(agent: str, fleet: str, known: Collection[str]) -> str:
    names = sorted(known)
    listed = ", ".join(names[:LISTED_NAMES]) or "none"
    if len(names) > LISTED_NAMES:
        listed += f", ... ({len(names)} in all; `flotilla ps -q` lists them)"
    return f"no agent {agent!r} in fleet {fleet}{did_you_mean(agent, names)}; its agents: {listed}"

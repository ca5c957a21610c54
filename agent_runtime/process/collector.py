"""Loading modules with Python's cyclic garbage collector paused.

Importing the runtime (and the orchestrator) makes tens of thousands of objects that live as long
as the process: modules, classes, functions, pydantic's validators. While they are being made,
the collector walks the young ones every 700 allocations and the older ones every few of those
walks, finding nothing to free: about 5 % of an agent's start and an eighth of the orchestrator's.
`collector_paused` turns collection off for such a stretch and then freezes every object that
exists (`gc.freeze`): the collector never walks them again, and a forked child shares their
memory pages instead of copying the ones a walk would have written to. Reference counting still
frees what is dropped; only garbage held in a cycle at the moment of the freeze is kept.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Collection off for the block; then what exists frozen, and collection as it was before."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()

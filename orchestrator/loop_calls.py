"""Calling into the orchestrator's event loop from any thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


def call_in_loop(loop: asyncio.AbstractEventLoop | None, fn: Callable[..., Any], *args: Any) -> None:
    """Run `fn(*args)` in `loop`'s thread: at once when called there, else scheduled thread-safely.
    Nothing happens when there is no loop (yet) or it has closed."""
    if loop is None or loop.is_closed():
        return
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        fn(*args)
    else:
        loop.call_soon_threadsafe(fn, *args)

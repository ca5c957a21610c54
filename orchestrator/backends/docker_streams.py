"""Closing a container's attach stream: its socket to the engine, and the HTTP response that
still holds it. Left to the garbage collector, each one is an open socket (and a warning) until
then."""

from __future__ import annotations

import contextlib
from typing import Any


def close_attach_stream(output: Any) -> None:
    if output is None:
        return
    with contextlib.suppress(OSError):
        output.close()
    response = getattr(output, "_response", None)
    if response is not None:
        response.close()

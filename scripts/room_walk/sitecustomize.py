"""Loaded through PYTHONPATH by scripts/room-walk: records, per process, each call that enters
another room of orchestrator/ (a top-level package or module) than its nearest orchestrator caller."""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from types import FrameType
from typing import Any

OUT = os.environ.get("ROOM_WALK_OUT")
SRC = os.environ.get("ROOM_WALK_SRC", "")
PREFIX = os.path.join(SRC, "orchestrator") + os.sep
steps: list[tuple[str | None, str]] = []


def _room(filename: str) -> str | None:
    if not filename.startswith(PREFIX):
        return None
    head = filename[len(PREFIX) :].split(os.sep, 1)[0]
    return head.removesuffix(".py")


def _profile(frame: FrameType, event: str, arg: Any) -> None:
    if event != "call":
        return
    callee = _room(frame.f_code.co_filename)
    if callee is None:
        return
    caller = None
    back = frame.f_back
    while back is not None and caller is None:
        caller = _room(back.f_code.co_filename)
        back = back.f_back
    if caller != callee:
        steps.append((caller, callee))


def _flush() -> None:
    with open(os.path.join(str(OUT), f"{os.getpid()}.txt"), "w") as out:
        out.writelines(f"{caller}\t{callee}\n" for caller, callee in list(steps))


def _flush_every_second() -> None:
    while True:
        time.sleep(1.0)
        _flush()


def _start_flusher() -> None:
    threading.Thread(target=_flush_every_second, daemon=True).start()


def _in_forked_child() -> None:
    steps.clear()
    _start_flusher()


if OUT and SRC:
    sys.setprofile(_profile)
    threading.setprofile(_profile)
    _start_flusher()
    atexit.register(_flush)
    os.register_at_fork(after_in_child=_in_forked_child)

"""One heartbeat tick, walked: which rooms of orchestrator/ it enters and how often it goes back.

A fleet of one agent whose HEARTBEAT.md rule is due is built in process (as the orchestrator
wires it, on the fake engine), put to sleep, and ticked once while every call is traced. A room
is a top-level package or module of orchestrator/ (as `scripts/room-walk` counts them).

- rooms: the rooms the tick enters;
- steps: calls that cross from one room into another (each ends in one return to the caller),
  and the distinct (caller room, callee room) pairs among them;
- climbs back: steps into a room that is already on the call stack (a callee calling back up);
- upward steps: steps from a lower layer into a higher one (the layers of
  tests/test_architecture.py: foundation < domain < api < composition root);
- entries of the tick's own room (`scheduler`) after the first.

    python scripts/room_walk/tick.py [--list]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SRC = Path(os.environ.get("ROOM_WALK_SRC", ROOT))
sys.path.insert(0, str(SRC))

from agent_runtime.workspace.versioned import scaffold  # noqa: E402
from orchestrator.config.loader import load_fleet  # noqa: E402
from orchestrator.scheduler.clock import ManualClock  # noqa: E402
from orchestrator.testing.fake_backend import FakeBackend, fake_spec  # noqa: E402
from orchestrator.wiring import attach_subsystems, core_services, fleet_manager  # noqa: E402

PREFIX = str(SRC / "orchestrator") + os.sep
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
FLEET = (
    "version: 1\nfleet: tickwalk\nagents:\n  worker:\n    role: walks one tick\n    heartbeat: {every: 15m}\n"
)


FOUNDATION = {"errors", "state", "events", "config"}
UPPER = {"api": 3, "services": 3, "wiring": 4, "server": 4, "listeners": 4, "cli": 5}


def layer(room: str) -> int:
    return 1 if room in FOUNDATION else UPPER.get(room, 2)


def _room(filename: str) -> str | None:
    if not filename.startswith(PREFIX):
        return None
    room = filename[len(PREFIX) :].split(os.sep, 1)[0].removesuffix(".py")
    return "backends" if room == "testing" else room  # the fake engine stands for the real one


class Walk:
    def __init__(self) -> None:
        self.stack: list[str] = []
        self.steps: list[tuple[str, str]] = []
        self.climbs: list[tuple[str, str]] = []
        self.entered: list[bool] = []  # per open frame: did its call enter a room

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            room = _room(frame.f_code.co_filename)
            entered = room is not None and (not self.stack or self.stack[-1] != room)
            self.entered.append(entered)
            if room is None or not entered:
                return
            if self.stack:
                self.steps.append((self.stack[-1], room))
                if room in self.stack:
                    self.climbs.append((self.stack[-1], room))
            self.stack.append(room)
        elif event == "return" and self.entered and self.entered.pop():
            self.stack.pop()


def walk_one_tick() -> Walk:
    with tempfile.TemporaryDirectory() as tmp:
        fleet_file = Path(tmp) / "fleet.yaml"
        fleet_file.write_text(FLEET)
        clock = ManualClock(START)
        backend = FakeBackend()
        core = core_services(load_fleet(fleet_file), backend)
        core.operator_token = core.tokens.mint_operator()
        services = attach_subsystems(core, fleet_manager(core), clock=clock)
        agent_dir = services.paths.agent_dir("worker")
        scaffold(
            agent_dir, {"HEARTBEAT.md": "## Rules\n- every 15m: check the queue\n"}, {"SYSTEM.md": "s\n"}
        )
        backend.start(backend.create(fake_spec("tickwalk", "worker", str(agent_dir))).id)
        services.scheduler.put_idle_to_sleep(clock.now())  # its idle time starts now
        clock.advance(timedelta(hours=2).total_seconds())
        asleep = services.scheduler.put_idle_to_sleep(clock.now())
        print(f"asleep before the tick: {asleep}")
        walk = Walk()
        sys.setprofile(walk.profile)
        try:
            result = services.scheduler.tick_now("worker")
        finally:
            sys.setprofile(None)
        print(f"tick outcome: {result.outcome} (woke: {result.woke})")
        services.db.close()
        return walk


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--list", action="store_true", help="print every step between rooms")
    args = parser.parse_args()
    walk = walk_one_tick()
    rooms = {room for step in walk.steps for room in step}
    entries = Counter(callee for _, callee in walk.steps)
    print(f"rooms entered: {len(rooms)}: {' '.join(sorted(rooms))}")
    print(f"steps between rooms (and returns): {len(walk.steps)}, distinct: {len(set(walk.steps))}")
    upward = [(a, b) for a, b in walk.steps if layer(b) > layer(a)]
    print(f"upward steps: {len(upward)}: {' '.join(sorted({f'{a}->{b}' for a, b in upward}))}")
    print(f"climbs back into a room on the stack: {len(walk.climbs)}")
    print(f"entries of scheduler after the first: {entries['scheduler']}")
    if args.list:
        for (caller, callee), times in Counter(walk.steps).most_common():
            print(f"  {caller} -> {callee}: {times}")


if __name__ == "__main__":
    main()

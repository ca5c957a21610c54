"""Container health checks: `python3 -m agent_runtime.health` exits 0 when the agent is alive,
`python3 -m agent_runtime.health --ready` when it is also in touch with its orchestrator.

The check-in thread touches `<data>/.runtime/alive` every few seconds whether or not the
orchestrator answers, so a fresh file means the process is running and not wedged; it touches
`<data>/.runtime/ready` only after a check-in the orchestrator accepted, so a fresh one means the
agent can be given work (a readiness probe: a pod that cannot reach its orchestrator is not ready).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

FRESH_FOR_S = 30.0
ALIVE_FILE = "alive"
READY_FILE = "ready"


def is_alive(
    data_dir: Path, now: float | None = None, fresh_for_s: float = FRESH_FOR_S, name: str = ALIVE_FILE
) -> bool:
    """Whether `<data>/.runtime/NAME` was touched within `fresh_for_s`."""
    try:
        touched = (data_dir / ".runtime" / name).stat().st_mtime
    except FileNotFoundError:
        return False
    current = time.time() if now is None else now
    return current - touched < fresh_for_s


def main(args: list[str]) -> int:
    data_dir = Path(os.environ.get("FLOTILLA_DATA", "").strip() or "/data")
    ready = args == ["--ready"]
    if args and not ready:
        print(f"usage: python3 -m agent_runtime.health [--ready]; not {' '.join(args)!r}")
        return 2
    name = READY_FILE if ready else ALIVE_FILE
    if is_alive(data_dir, name=name):
        return 0
    what = "not ready (no check-in accepted by the orchestrator)" if ready else "not alive"
    print(f"agent {what}: {data_dir}/.runtime/{name} is missing or older than {FRESH_FOR_S:.0f}s")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

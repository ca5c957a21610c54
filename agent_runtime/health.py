"""Container health check: `python3 -m agent_runtime.health` exits 0 when the agent is alive.

The check-in thread touches `<data>/.runtime/alive` every few seconds whether or not the
orchestrator answers, so a fresh file means the process is running and not wedged.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

FRESH_FOR_S = 30.0


def is_alive(data_dir: Path, now: float | None = None, fresh_for_s: float = FRESH_FOR_S) -> bool:
    try:
        touched = (data_dir / ".runtime" / "alive").stat().st_mtime
    except FileNotFoundError:
        return False
    current = time.time() if now is None else now
    return current - touched < fresh_for_s


def main() -> int:
    data_dir = Path(os.environ.get("FLOTILLA_DATA", "").strip() or "/data")
    if is_alive(data_dir):
        return 0
    print(f"agent not alive: {data_dir}/.runtime/alive is missing or older than {FRESH_FOR_S:.0f}s")
    return 1


if __name__ == "__main__":
    sys.exit(main())

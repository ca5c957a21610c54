"""The input files of one `exec` call, copied from the operator's copy of the workspace into a
folder of the orchestrator's own, which the sandbox sees read-only and which is removed after.

The folder sits under `.flotilla/sandbox/` (0700, the orchestrator's): only the files inside are
readable by others, so that the sandbox's user (uid 10001) can read them through its mount.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agent_runtime import Workspace


@contextmanager
def staged_inputs(root: Path, workspace: Workspace, names: list[str]) -> Iterator[Path | None]:
    """A folder holding the named files as the operator's copy has them; None for no files."""
    if not names:
        yield None
        return
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    root.chmod(0o700)
    call = root / f"exec-{secrets.token_hex(8)}"
    call.mkdir(mode=0o700)
    inputs = call / "in"
    try:
        inputs.mkdir()
        for name in names:
            _write_read_only(inputs / name, workspace.read(name).encode("utf-8"))
        inputs.chmod(0o555)
        yield inputs
    finally:
        if inputs.exists():
            inputs.chmod(0o700)
        shutil.rmtree(call, ignore_errors=True)


def _write_read_only(path: Path, content: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o444)
    with os.fdopen(fd, "wb") as file:
        file.write(content)

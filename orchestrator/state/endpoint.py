"""Where a running orchestrator can be reached: `.flotilla/endpoint.json` (mode 0600), written at
start-up with its loopback URL and the operator token, read by the CLI next to the fleet file."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from orchestrator.state.paths import StatePaths


class Endpoint(BaseModel):
    url: str
    token: str
    pid: int


def read_endpoint(paths: StatePaths) -> Endpoint | None:
    try:
        raw = json.loads(paths.endpoint_file.read_text())
    except (FileNotFoundError, ValueError):
        return None
    endpoint = Endpoint.model_validate(raw)
    if not _pid_alive(endpoint.pid):
        return None
    return endpoint


def write_endpoint(paths: StatePaths, endpoint: Endpoint) -> None:
    target = paths.endpoint_file
    tmp = target.with_suffix(".tmp")
    tmp.write_text(endpoint.model_dump_json())
    tmp.chmod(0o600)
    tmp.replace(target)


def _pid_alive(pid: int) -> bool:
    """A live process (a zombie left by a killed orchestrator that nobody reaped is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"

"""The Docker fixtures of tests/orchestrator/docker (client, agent image), shared with chaos."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_DOCKER_CONFTEST = Path(__file__).resolve().parents[1] / "orchestrator" / "docker" / "conftest.py"
_spec = importlib.util.spec_from_file_location("docker_fixtures", _DOCKER_CONFTEST)
assert _spec is not None and _spec.loader is not None
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)

docker_client = _fixtures.docker_client
source_snapshot = _fixtures.source_snapshot
agent_image = _fixtures.agent_image

"""The snapshot of a stopped agent runs no code the agent planted in its storage: a `.pth` file
under /data/.local (Python's user site when HOME is /data) would run in the throwaway container
at start-up. Real daemon, real agent image."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from orchestrator.backends.base import StoppedStorage
from orchestrator.backends.docker import DockerBackend
from orchestrator.backends.docker_storage import AGENT_UID, volume_name
from orchestrator.images.build import ImageBuildResult

pytestmark = pytest.mark.docker

MARKER = "PLANTED CODE RAN"
# Python runs every line of a .pth file in a site-packages folder that starts with `import`.
PLANTED = f'import sys, os; sys.stderr.write("{MARKER}\\n"); sys.stdout.write("{MARKER}\\n"); os._exit(42)\n'
PLANT = (
    "import os, site, sys\n"
    "folder = site.getusersitepackages()\n"
    "os.makedirs(folder, exist_ok=True)\n"
    "open(os.path.join(folder, 'zz-planted.pth'), 'w').write(sys.argv[1])\n"
    "os.makedirs('/data/history', exist_ok=True)\n"
    "open('/data/history/2026-12-01.jsonl', 'w').write('{\"turn\": 1}\\n')\n"
    "print(folder)\n"
)


def plant(docker_client: Any, image: str, fleet: str, agent: str) -> str:
    """The agent's storage as a hostile agent leaves it; the folder the .pth went into."""
    volume = volume_name(fleet, agent)
    docker_client.volumes.create(volume, labels={"io.flotilla.fleet": fleet})
    output = docker_client.containers.run(
        image,
        entrypoint=["python3", "-c", PLANT, PLANTED],
        user=f"{AGENT_UID}:{AGENT_UID}",
        environment={"HOME": "/data"},
        volumes={volume: {"bind": "/data", "mode": "rw"}},
        network_mode="none",
        remove=True,
    )
    return str(output.decode().strip())


def test_a_pth_planted_in_the_agents_storage_does_not_run_in_its_snapshot(
    agent_image: ImageBuildResult, fleet: str, docker_client: Any, tmp_path: Path
) -> None:
    folder = plant(docker_client, agent_image.tag, fleet, "writer")
    assert folder.startswith("/data/"), folder
    backend = DockerBackend(docker_client)
    run = backend.snapshot_stopped(StoppedStorage(fleet, "writer", agent_image.tag, tmp_path))
    written = b"".join(run.blocks())
    problem = run.finish()
    assert MARKER.encode() not in written
    assert problem is None, problem
    assert b"history/2026-12-01.jsonl" in written

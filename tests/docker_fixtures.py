"""Fixtures for tests against the real Docker daemon: client, agent image, a throwaway fleet."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from orchestrator.backends.base import BackendUnavailable
from orchestrator.backends.docker import connect_docker, network_name
from orchestrator.images.build import (
    BASE_SCRIPT,
    DEFAULT_TAG,
    DOCKERFILE,
    RUNTIME_PACKAGE,
    WHEELHOUSE,
    ImageBuildResult,
    build_image,
    default_repo_root,
)

# testcontainers reads this when it first starts a container; its reaper image is not available here.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")


def unique(topic: str) -> str:
    return f"flt-test-{topic}-{secrets.token_hex(3)}"


@pytest.fixture(scope="session")
def docker_client() -> Any:
    """The daemon's client; without a daemon the test skips, or fails under CI=true."""
    try:
        return connect_docker()
    except BackendUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs Docker: {exc}")
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def source_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the image's sources taken at session start, so edits made while the tests run
    cannot make the session's image stale. The wheelhouse is shared with the checkout."""
    root = default_repo_root()
    snapshot = tmp_path_factory.mktemp("source")
    shutil.copy(root / "pyproject.toml", snapshot / "pyproject.toml")
    shutil.copytree(root / DOCKERFILE.parent, snapshot / DOCKERFILE.parent)
    shutil.copytree(root / BASE_SCRIPT.parent, snapshot / BASE_SCRIPT.parent)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(root / RUNTIME_PACKAGE, snapshot / RUNTIME_PACKAGE, ignore=ignore)
    (root / WHEELHOUSE).mkdir(parents=True, exist_ok=True)
    (snapshot / WHEELHOUSE).symlink_to(root / WHEELHOUSE, target_is_directory=True)
    return snapshot


@pytest.fixture(scope="session")
def agent_image(docker_client: Any, source_snapshot: Path) -> ImageBuildResult:
    """The agent image, built once per session (a no-op when it is up to date)."""
    return build_image(source_snapshot, tag=DEFAULT_TAG, client=docker_client)


@pytest.fixture
def fleet(docker_client: Any) -> Iterator[str]:
    """A unique fleet name; every container and network carrying it is removed afterwards."""
    name = unique("docker")
    yield name
    for container in docker_client.containers.list(all=True, filters={"name": name}):
        if name in container.name:
            container.remove(force=True)
    for volume in docker_client.volumes.list(filters={"label": f"io.flotilla.fleet={name}"}):
        with contextlib.suppress(docker.errors.APIError):
            volume.remove(force=True)
    for network in docker_client.networks.list(names=[network_name(name)]):
        if network.name == network_name(name):
            with contextlib.suppress(docker.errors.NotFound):
                network.remove()

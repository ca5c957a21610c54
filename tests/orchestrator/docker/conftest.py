"""Fixtures for tests against the real Docker daemon: client, agent image, a throwaway fleet."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from typing import Any

import docker.errors
import pytest

from orchestrator.backends.base import BackendUnavailable
from orchestrator.backends.docker import connect_docker, network_name
from orchestrator.image import DEFAULT_TAG, ImageBuildResult, build_image

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
def agent_image(docker_client: Any) -> ImageBuildResult:
    """The agent image, built once per session (a no-op when it is up to date)."""
    return build_image(tag=DEFAULT_TAG, client=docker_client)


@pytest.fixture
def fleet(docker_client: Any) -> Iterator[str]:
    """A unique fleet name; every container and network carrying it is removed afterwards."""
    name = unique("docker")
    yield name
    for container in docker_client.containers.list(all=True, filters={"name": name}):
        if name in container.name:
            container.remove(force=True)
    for network in docker_client.networks.list(names=[network_name(name)]):
        if network.name == network_name(name):
            with contextlib.suppress(docker.errors.NotFound):
                network.remove()

"""Engine faults under a running fleet, on Docker and on Swarm: its network or its agent's unit
removed behind the orchestrator's back. A message to the agent then says within seconds why no
reply comes, and `down -v` cleans up in one go, or says in one `error:` line what to do: never a
traceback."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import docker.errors
import pytest
from test_fleet_e2e import RunningFleet, unique
from test_swarm_fleet import SwarmFleet

from orchestrator.backends.base import LABEL_FLEET, UnitInfo
from orchestrator.backends.docker import DockerBackend, network_name
from orchestrator.backends.swarm import SwarmBackend
from orchestrator.images.names import DEFAULT_IMAGE

pytestmark = pytest.mark.docker

SAID_WITHIN_S = 30.0


def _fleet_yaml(name: str) -> str:
    return f"version: 1\nfleet: {name}\nagents:\n  solo:\n    role: alone\n    always_on: true\n"


def _one_clean_line_or_none(stderr: str) -> None:
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) <= 1, stderr


def test_docker_network_removed_under_the_fleet(docker_client: Any, tmp_path: Path) -> None:
    name = unique("vanish")
    (tmp_path / "fleet.yaml").write_text(_fleet_yaml(name))
    fleet = RunningFleet(name, tmp_path, DEFAULT_IMAGE)
    try:
        fleet.up()
        (container_id,) = fleet.container_ids(docker_client).values()
        network = docker_client.networks.get(network_name(name))
        network.disconnect(container_id, force=True)
        network.remove()
        docker_client.containers.get(container_id).remove(force=True)

        began = time.monotonic()
        sent = fleet.flotilla("send", "solo", "hello", "--timeout", "240", check=False)
        assert time.monotonic() - began < SAID_WITHIN_S, sent.stderr
        assert sent.returncode == 1
        assert "agent 'solo' cannot take the message" in sent.stderr
        assert f"network {network_name(name)} not found" in sent.stderr, sent.stderr

        down = fleet.flotilla("down", "-v", check=False)
        _one_clean_line_or_none(down.stderr)
        assert down.returncode == 0, down.stderr
        assert not docker_client.containers.list(all=True, filters={"label": f"{LABEL_FLEET}={name}"})
    finally:
        fleet.flotilla("down", "-v", check=False)


def test_swarm_service_and_network_removed_under_the_fleet(docker_client: Any, tmp_path: Path) -> None:
    if docker_client.info().get("Swarm", {}).get("LocalNodeState") != "active":
        pytest.skip("this engine is not a swarm manager (`.ci/run` makes it one)")
    name = unique("swarm-vanish")
    (tmp_path / "fleet.yaml").write_text(_fleet_yaml(name))
    fleet = SwarmFleet(name, tmp_path, DEFAULT_IMAGE)
    try:
        fleet.up()
        labelled = {"label": [f"{LABEL_FLEET}={name}"]}
        for service in docker_client.services.list(filters=labelled):
            service.remove()
        for network in docker_client.networks.list(filters=labelled):
            _remove_when_free(network)

        down = fleet.flotilla("down", "-v", check=False)

        _one_clean_line_or_none(down.stderr)
        assert down.returncode == 0, down.stdout + down.stderr
        assert not docker_client.services.list(filters=labelled)
        assert not docker_client.networks.list(filters=labelled)
    finally:
        fleet.flotilla("down", "-v", check=False)


def _remove_when_free(network: Any) -> None:
    """Tasks leave a network a moment after their service is removed."""
    deadline = time.monotonic() + 30
    while True:
        try:
            network.remove()
            return
        except docker.errors.NotFound:
            return
        except docker.errors.APIError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_what_swarm_says_of_a_task_that_cannot_run_names_its_state_and_error(docker_client: Any) -> None:
    """What `up` prints for an agent that is not ready when its wait runs out."""
    if docker_client.info().get("Swarm", {}).get("LocalNodeState") != "active":
        pytest.skip("this engine is not a swarm manager (`.ci/run` makes it one)")
    name = unique("swarm-says")
    service = docker_client.services.create(
        "flotilla/no-such-image:w37a",
        name=name,
        labels={LABEL_FLEET: name},
        mode={"Replicated": {"Replicas": 1}},
    )
    try:
        backend = SwarmBackend(docker_client)
        unit = UnitInfo(id=service.id, name=name, agent="solo", fleet=name, config_hash="", state="created")
        deadline = time.monotonic() + 60
        said = backend.engine_says(unit)
        while "No such image" not in said and time.monotonic() < deadline:
            time.sleep(1)
            said = backend.engine_says(unit)
        assert said.startswith(("task rejected, ", "task failed, ")), said
        assert "No such image: flotilla/no-such-image:w37a" in said
    finally:
        service.remove()


def test_what_docker_says_of_a_container_that_stopped_names_its_exit_code(docker_client: Any) -> None:
    name = unique("docker-says")
    container = docker_client.containers.run(
        DEFAULT_IMAGE, entrypoint=["python3", "-c", "raise SystemExit(3)"], name=name, detach=True
    )
    try:
        container.wait(timeout=60)
        backend = DockerBackend(docker_client)
        unit = UnitInfo(id=container.id, name=name, agent="solo", fleet=name, config_hash="", state="exited")
        assert backend.engine_says(unit) == "container exited, exit code 3"
    finally:
        container.remove(force=True)

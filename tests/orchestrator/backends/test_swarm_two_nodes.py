"""Placement and a move between two nodes, on a two-node swarm of Docker-in-Docker containers
(tests/orchestrator/backends/dind.py says how it is made and what it needs of the host).

The writer is placed on the second node by fleet.yaml's `placement`; it learns a fact and writes
a file of its own, and is moved to the first node: its state goes over its link, not through
either node's filesystem, and its old volume stays on the second node, named in the result.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dind import NodesUnavailable, TwoNodeSwarm, node_image
from test_fleet_e2e import REPO, _free_port, unique, wait_for

from orchestrator.images.build import ImageBuildResult

pytestmark = pytest.mark.docker

FACT = "The mill on the second node grinds rye on Tuesdays"
LEARNING = "/data/workspace/learnings/crossed.md"


class TwoNodeFleet:
    def __init__(self, swarm: TwoNodeSwarm, folder: Path) -> None:
        self.swarm = swarm
        self.folder = folder

    def flotilla(self, *args: str, check: bool = True, timeout: float = 300) -> str:
        return self.swarm.flotilla(self.folder, *args, check=check, timeout=timeout)

    def agents(self) -> dict[str, dict[str, Any]]:
        return self.swarm.agents(self.folder)

    def task(self, node: int, agent: str) -> str:
        """The id of the agent's running task container on node 1 or 2."""
        found = (
            self.swarm.nodes[node - 1]
            .docker(
                "ps",
                "-q",
                "--filter",
                f"label=io.flotilla.agent={agent}",
                "--filter",
                "label=io.flotilla.component=agent",
            )
            .split()
        )
        assert len(found) == 1, found
        return found[0]

    def in_task(self, node: int, agent: str, command: str) -> str:
        task = self.task(node, agent)
        return (
            self.swarm.nodes[node - 1].docker("exec", "-u", "10001:10001", task, "sh", "-c", command).strip()
        )


@pytest.fixture(scope="module")
def fleet(
    docker_client: Any, agent_image: ImageBuildResult, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TwoNodeFleet]:
    if os.geteuid() != 0 or shutil.which("nsenter") is None:
        pytest.skip("needs root and nsenter to run the orchestrator in the manager node's network")
    workdir = tmp_path_factory.mktemp("two-nodes")
    try:
        image = node_image(docker_client, workdir)
    except NodesUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs Debian's docker.io for the swarm nodes: {exc}")
        pytest.skip(str(exc))
    prefix = unique("nodes")
    swarm = TwoNodeSwarm(docker_client, f"{prefix}-net")
    name = unique("two")
    folder = workdir / "fleet"
    folder.mkdir()
    shutil.copytree(REPO / "examples", folder / "examples")
    shutil.copy(REPO / "PROJECT.md", folder / "PROJECT.md")
    text = (REPO / "fleet.yaml").read_text().replace("fleet: demo", f"fleet: {name}")
    text = text.replace(
        "    interface: examples/interfaces/writer.md",
        f"    interface: examples/interfaces/writer.md\n    placement: {{ node: {prefix}-node2 }}",
    )
    (folder / "fleet.yaml").write_text(text)
    running = TwoNodeFleet(swarm, folder)
    try:
        swarm.start(image, prefix)
        for node in swarm.nodes:
            node.load(agent_image.tag)
        running.flotilla(
            "up", "-d", "--runtime", "swarm", "--port", str(_free_port()), "--image", agent_image.tag
        )
        wait_for(
            lambda: all(a["health"] == "healthy" for a in running.agents().values()), "agents to check in"
        )
        yield running
    finally:
        if swarm.nodes:
            running.flotilla("down", "-v", check=False)
        swarm.stop()


def test_placement_puts_the_writer_on_the_second_node(fleet: TwoNodeFleet) -> None:
    second = fleet.swarm.nodes[1].hostname
    assert fleet.agents()["writer"]["node"] == second
    assert fleet.task(2, "writer")
    assert "[test model]" in fleet.flotilla("send", "writer", "hello from the manager")


def test_move_carries_the_writer_to_the_first_node(fleet: TwoNodeFleet) -> None:
    first, second = (node.hostname for node in fleet.swarm.nodes)
    fleet.flotilla("memory", "add", "writer", FACT)
    fleet.in_task(2, "writer", f"mkdir -p {Path(LEARNING).parent} && echo crossed-nodes > {LEARNING}")

    started = time.monotonic()
    result = fleet.flotilla("move", "writer", "--node", first, timeout=400)
    print(f"move between two nodes: {time.monotonic() - started:.1f}s: {result.strip()}")

    assert f"writer moved to {first} with its state" in result
    assert f"stays on node {second}" in result  # the old volume, out of this engine's reach
    wait_for(lambda: fleet.agents()["writer"]["node"] == first, "the writer to run on the first node")
    assert fleet.in_task(1, "writer", f"cat {LEARNING}") == "crossed-nodes"
    assert FACT in fleet.flotilla("memory", "search", "writer", "mill rye Tuesdays", "--json")
    wait_for(lambda: fleet.agents()["writer"]["health"] == "healthy", "the moved writer to check in")
    assert "[test model]" in fleet.flotilla("send", "writer", "settled in on the manager?")
    volumes = fleet.swarm.nodes[1].docker("volume", "ls", "-q").split()
    assert any(v.endswith("-writer-data") for v in volumes)  # the state before the move, kept

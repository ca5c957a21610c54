"""examples/workflow on the docker runtime, the orchestrator killed with SIGKILL twice: once while
the run waits for its approval, once right after the approval while `draft` is in flight. After
each `up -d` the run goes on; it completes with `find_facts` and `draft` each worked exactly once
(the agents' run records) and the step in flight delivered at most twice."""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.images.build import ImageBuildResult
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import free_port, run_flotilla, wait_for
from tests.docker_fixtures import unique

pytestmark = pytest.mark.docker

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "workflow"


def up(folder: Path) -> None:
    started = run_flotilla(folder, "up", "-d", "--runtime", "docker", "--port", str(free_port()), timeout=900)
    assert started.returncode == 0, started.stdout + started.stderr


@pytest.fixture
def fleet_dir(tmp_path: Path, agent_image: ImageBuildResult) -> Iterator[Path]:
    folder = tmp_path / "workflow"
    shutil.copytree(EXAMPLE, folder)
    text = (folder / "fleet.yaml").read_text()
    (folder / "fleet.yaml").write_text(text.replace("fleet: workflow-demo", f"fleet: {unique('wf')}"))
    try:
        up(folder)
        yield folder
    finally:
        run_flotilla(folder, "down", "-v")


def shown(folder: Path, run_id: str) -> dict[str, Any]:
    result = run_flotilla(folder, "workflow", "show", run_id, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def step(run: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in run["steps"] if s["step"] == name)


def kill_orchestrator(folder: Path) -> None:
    paths = StatePaths.for_fleet_file(folder / "fleet.yaml")
    endpoint = read_endpoint(paths)
    assert endpoint is not None
    os.kill(endpoint.pid, signal.SIGKILL)

    def gone() -> bool:
        try:
            os.kill(endpoint.pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_for(gone, "the orchestrator to die")


def turns_for(folder: Path, agent: str, item_id: str) -> int:
    result = run_flotilla(folder, "runs", agent, "--kind", "turn", "--json", "-n", "100")
    assert result.returncode == 0, result.stdout + result.stderr
    return sum(1 for run in json.loads(result.stdout) if run["item_id"] == item_id)


def test_a_run_survives_kills_and_works_each_step_once(fleet_dir: Path) -> None:
    started = run_flotilla(fleet_dir, "workflow", "run", "digest", "--input", '{"topic": "tides"}')
    assert started.returncode == 0, started.stdout + started.stderr
    run_id = started.stdout.strip()
    wait_for(lambda: step(shown(fleet_dir, run_id), "review")["state"] == "approval", "the approval", 300)
    approval_id = step(shown(fleet_dir, run_id), "review")["approval_id"]

    kill_orchestrator(fleet_dir)
    up(fleet_dir)
    after = shown(fleet_dir, run_id)
    assert after["state"] == "running"
    assert (
        step(after, "review")["state"] == "approval" and step(after, "review")["approval_id"] == approval_id
    )
    assert step(after, "find_facts")["state"] == "done" and step(after, "find_facts")["attempt"] == 1

    approved = run_flotilla(fleet_dir, "approve", approval_id)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    wait_for(
        lambda: step(shown(fleet_dir, run_id), "draft")["state"] != "pending", "draft to go out", 60, 0.05
    )
    kill_orchestrator(fleet_dir)
    up(fleet_dir)

    wait_for(lambda: shown(fleet_dir, run_id)["state"] != "running", "the run to finish", 300)
    finished = shown(fleet_dir, run_id)
    assert finished["state"] == "succeeded", finished
    facts, draft = step(finished, "find_facts"), step(finished, "draft")
    assert facts["output"]["facts"] and draft["output"]["text"]
    assert facts["attempt"] == 1 and draft["attempt"] == 1
    assert turns_for(fleet_dir, "researcher", facts["item_id"]) == 1
    assert turns_for(fleet_dir, "writer", draft["item_id"]) == 1
    items = run_flotilla(fleet_dir, "inbox", "list", "writer", "--all", "--json")
    delivered = [i for i in json.loads(items.stdout) if i["id"] == draft["item_id"]]
    assert delivered and delivered[0]["attempt"] <= 2, delivered

"""An agent image of the previous release, built from that release's sources, checks in with this
orchestrator and answers a message (`flotilla up` on the real Docker daemon). The release is the
one the wire recording was taken from (tests/fixtures/agent-wire/previous-release.json)."""

from __future__ import annotations

import io
import json
import secrets
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.images.build import (
    BASE_SCRIPT,
    DEFAULT_TAG,
    DOCKERFILE,
    RUNTIME_PACKAGE,
    WHEELHOUSE,
    build_image,
    default_repo_root,
)
from orchestrator.testing.cli import free_port, run_flotilla

pytestmark = pytest.mark.docker

RECORDING = Path(__file__).resolve().parents[2] / "fixtures" / "agent-wire" / "previous-release.json"
FLEET = """\
version: 1
fleet: {name}
defaults:
  always_on: true
agents:
  greeter:
    role: an agent of the previous release
"""


def _previous_release() -> str:
    commit: str = json.loads(RECORDING.read_text())["recorded_from"]
    return commit


def _sources_of(commit: str, folder: Path) -> None:
    """The image's sources at `commit`, from this repository's history; the wheelhouse is shared."""
    root = default_repo_root()
    paths = ["pyproject.toml", str(DOCKERFILE.parent), str(BASE_SCRIPT.parent), str(RUNTIME_PACKAGE)]
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", "--format=tar", commit, *paths], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as sources:
        sources.extractall(folder, filter="data")
    (root / WHEELHOUSE).mkdir(parents=True, exist_ok=True)
    (folder / WHEELHOUSE).symlink_to(root / WHEELHOUSE, target_is_directory=True)


def _shallow() -> bool:
    answer = subprocess.run(
        ["git", "-C", str(default_repo_root()), "rev-parse", "--is-shallow-repository"],
        capture_output=True,
        text=True,
        check=False,
    )
    return answer.stdout.strip() == "true"


@pytest.fixture(scope="module")
def previous_image(docker_client: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    commit = _previous_release()
    known = subprocess.run(
        ["git", "-C", str(default_repo_root()), "cat-file", "-e", f"{commit}^{{commit}}"], check=False
    )
    if known.returncode != 0 and _shallow():
        pytest.skip(f"a shallow clone: the previous release's commit {commit} is not fetched")
    if known.returncode != 0:
        pytest.fail(f"the previous release's commit {commit} is not in this repository's history")
    folder = tmp_path_factory.mktemp("previous-release")
    _sources_of(commit, folder)
    tag = f"{DEFAULT_TAG}-previous-{commit[:12]}"
    build_image(folder, tag=tag, client=docker_client)
    return tag


def flotilla(folder: Path, *args: str) -> str:
    result = run_flotilla(folder, *args, timeout=300)
    assert result.returncode == 0, f"flotilla {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture
def fleet(previous_image: str, tmp_path: Path) -> Iterator[Path]:
    name = f"flt-test-previous-{secrets.token_hex(3)}"
    (tmp_path / "fleet.yaml").write_text(FLEET.format(name=name))
    try:
        flotilla(
            tmp_path, "up", "-d", "--runtime", "docker", "--port", str(free_port()), "--image", previous_image
        )
        yield tmp_path
    finally:
        run_flotilla(tmp_path, "down", "-v")


def test_an_agent_image_of_the_previous_release_checks_in_and_answers(fleet: Path) -> None:
    answer = flotilla(fleet, "send", "greeter", "hello from the new orchestrator")
    assert "hello from the new orchestrator" in answer
    agents = json.loads(flotilla(fleet, "ps", "--json"))["agents"]
    assert [(agent["name"], agent["health"]) for agent in agents] == [("greeter", "healthy")]

"""Image status, ensure_image and the `flotilla image` commands against the real daemon."""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from orchestrator.cli.image import image
from orchestrator.images.build import (
    DOCKERFILE,
    LABEL_INPUTS_HASH,
    RUNTIME_PACKAGE,
    ImageBuildResult,
    ensure_image,
    image_status,
)
from tests.docker_fixtures import unique


@pytest.fixture
def spare_tag(docker_client: Any) -> Iterator[str]:
    tag = f"flotilla/agent:{unique('tag')}"
    yield tag
    if docker_client.images.list(name=tag):
        docker_client.images.remove(tag)


@pytest.fixture
def changed_source(source_snapshot: Path, tmp_path: Path) -> Path:
    """A copy of the source tree whose agent_runtime differs from the built image's."""
    root = source_snapshot
    copy = tmp_path / "source"
    (copy / DOCKERFILE).parent.mkdir(parents=True)
    shutil.copy(root / DOCKERFILE, copy / DOCKERFILE)
    shutil.copy(root / "pyproject.toml", copy / "pyproject.toml")
    shutil.copytree(
        root / RUNTIME_PACKAGE, copy / RUNTIME_PACKAGE, ignore=shutil.ignore_patterns("__pycache__")
    )
    (copy / RUNTIME_PACKAGE / "extra_module.py").write_text("VALUE = 1\n")
    return copy


@pytest.mark.docker
def test_status_of_the_built_image(
    docker_client: Any, agent_image: ImageBuildResult, source_snapshot: Path
) -> None:
    status = image_status(source_snapshot, tag=agent_image.tag, client=docker_client)
    assert status.exists and status.image_id == agent_image.image_id
    assert status.image_hash == agent_image.inputs_hash
    assert status.size_bytes == agent_image.size_bytes


@pytest.mark.docker
def test_ensure_image_tags_an_existing_build_instead_of_building(
    docker_client: Any, agent_image: ImageBuildResult, spare_tag: str, source_snapshot: Path
) -> None:
    result = ensure_image(source_snapshot, tag=spare_tag, client=docker_client)
    assert result.built is False and result.up_to_date
    assert docker_client.images.get(spare_tag).id == agent_image.image_id


@pytest.mark.docker
def test_an_image_made_from_the_agent_image_is_not_taken_for_it(
    docker_client: Any, agent_image: ImageBuildResult, spare_tag: str, source_snapshot: Path
) -> None:
    """`FROM flotilla/agent` inherits the agent image's labels, its inputs hash included: a look
    for a build of these inputs must find the build, not the image made from it."""
    derived_tag = f"flotilla/agent:{unique('derived')}"
    dockerfile = f"FROM {agent_image.image_id}\nENV SOMEONE_ELSES=1\n".encode()
    docker_client.images.build(fileobj=io.BytesIO(dockerfile), tag=derived_tag, rm=True)
    try:
        derived = docker_client.images.get(derived_tag)
        assert derived.id != agent_image.image_id
        assert derived.labels[LABEL_INPUTS_HASH] == agent_image.inputs_hash
        result = ensure_image(source_snapshot, tag=spare_tag, client=docker_client)
        assert result.built is False and result.image_id == agent_image.image_id
        assert docker_client.images.get(spare_tag).id == agent_image.image_id
    finally:
        docker_client.images.remove(derived_tag)


@pytest.mark.docker
def test_ensure_image_uses_a_stale_image_and_says_so(
    docker_client: Any, agent_image: ImageBuildResult, changed_source: Path
) -> None:
    status = image_status(changed_source, tag=agent_image.tag, client=docker_client)
    assert status.exists and not status.up_to_date
    result = ensure_image(changed_source, tag=agent_image.tag, client=docker_client)
    assert result.built is False and result.up_to_date is False
    assert result.image_id == agent_image.image_id


@pytest.mark.docker
def test_image_commands(agent_image: ImageBuildResult, changed_source: Path, source_snapshot: Path) -> None:
    runner = CliRunner()
    source = ["--source", str(source_snapshot)]
    built = runner.invoke(image, ["build", "--tag", agent_image.tag, *source])
    assert built.exit_code == 0, built.output
    assert "up to date:" in built.output and agent_image.inputs_hash[:12] in built.output
    current = runner.invoke(image, ["status", "--tag", agent_image.tag, "--check", *source])
    assert current.exit_code == 0, current.output
    assert "up to date" in current.output
    stale = runner.invoke(
        image, ["status", "--tag", agent_image.tag, "--source", str(changed_source), "--check"]
    )
    assert stale.exit_code == 1 and "out of date" in stale.output
    missing = runner.invoke(image, ["status", "--tag", "flotilla/agent:" + unique("absent")])
    assert missing.exit_code == 0 and "missing" in missing.output


@pytest.mark.docker
def test_build_errors_are_one_message_not_a_traceback(agent_image: ImageBuildResult, tmp_path: Path) -> None:
    result = CliRunner().invoke(image, ["build", "--source", str(tmp_path)])
    assert result.exit_code == 1
    assert "Dockerfile" in result.output and "Traceback" not in result.output

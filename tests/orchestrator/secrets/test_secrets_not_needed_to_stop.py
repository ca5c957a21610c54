"""Stopping, listing and removing a fleet never need the secrets only its start uses.

examples/feed-digest declares `feed_token: {env: FEED_TOKEN}`. The fleet is started (process
runtime) with FEED_TOKEN set; every command that stops or looks then runs with it unset.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.testing.cli import free_port, run_flotilla

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "feed-digest"


def _environment(**extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name != "FEED_TOKEN"}
    return env | extra


WITHOUT_TOKEN = _environment()


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("feed-digest") / "feed-digest"
    shutil.copytree(EXAMPLE, folder)
    try:
        started = run_flotilla(
            folder,
            "up",
            "-d",
            "--runtime",
            "process",
            "--port",
            str(free_port()),
            env=_environment(FEED_TOKEN="example-feed-token"),
        )
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v", env=_environment(FEED_TOKEN="example-feed-token"))


def _ok(folder: Path, *args: str) -> str:
    result = run_flotilla(folder, *args, env=WITHOUT_TOKEN)
    assert result.returncode == 0, f"flotilla {' '.join(args)}: {result.stdout}{result.stderr}"
    assert "FEED_TOKEN" not in result.stdout
    return result.stdout + result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("ps",),
        ("ps", "--json"),
        ("logs", "digest"),
        ("events",),
        ("pause", "digest"),
        ("resume", "digest"),
        ("stop", "digest"),
        ("backup", "--json"),
    ],
    ids="-".join,
)
def test_commands_that_look_or_stop_run_without_the_secret(fleet_dir: Path, args: tuple[str, ...]) -> None:
    _ok(fleet_dir, *args)


def test_export_runs_without_the_secret(fleet_dir: Path, tmp_path: Path) -> None:
    _ok(
        fleet_dir,
        "export",
        "kubernetes",
        "-o",
        str(tmp_path / "k8s"),
        "--orchestrator-url",
        "http://10.0.0.1:8421",
    )
    assert (tmp_path / "k8s" / "kustomization.yaml").is_file()


def test_starting_still_needs_the_secret(fleet_dir: Path) -> None:
    result = run_flotilla(fleet_dir, "apply", env=WITHOUT_TOKEN)
    assert result.returncode == 2
    assert "the environment variable FEED_TOKEN is not set on the orchestrator host" in result.stderr


def test_down_and_down_v_run_without_the_secret(tmp_path: Path) -> None:
    folder = tmp_path / "feed-digest"
    shutil.copytree(EXAMPLE, folder)
    started = run_flotilla(
        folder,
        "up",
        "-d",
        "--runtime",
        "process",
        "--port",
        str(free_port()),
        env=_environment(FEED_TOKEN="example-feed-token"),
    )
    assert started.returncode == 0, started.stdout + started.stderr
    down = _ok(folder, "down")
    assert "fleet 'feed-digest' is down" in down
    assert not list((folder / ".flotilla" / "process" / "units").glob("*.json"))
    removed = _ok(folder, "down", "-v")
    assert "deleted the fleet's state" in removed
    assert not (folder / ".flotilla" / "state.db").exists()

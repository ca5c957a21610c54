"""One `--json` convention, as docs/cli.md states it: a JSON array (or object) without -F, empty
as `[]`; one JSON object per line only with -F. `events --type` picks types or families."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.testing.cli import free_port, run_flotilla, start_flotilla

FLEET = """\
version: 1
fleet: onejson
defaults:
  always_on: true
agents:
  writer:
    role: writes
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("onejson")
    (folder / "fleet.yaml").write_text(FLEET)
    try:
        started = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v")


def parsed(folder: Path, *args: str) -> object:
    result = run_flotilla(folder, *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def test_lists_are_one_json_array_and_empty_is_an_empty_array(folder: Path) -> None:
    events = parsed(folder, "events", "--json", "-n", "100")
    assert isinstance(events, list) and events and all("type" in event for event in events)
    assert parsed(folder, "inbox", "writer", "--json") == []
    assert parsed(folder, "alerts", "--json") == []


def test_events_type_picks_a_type_or_a_family(folder: Path) -> None:
    started = parsed(folder, "events", "--json", "--type", "agent.started")
    assert isinstance(started, list) and started
    assert {event["type"] for event in started} == {"agent.started"}
    family = parsed(folder, "events", "--json", "-t", "agent")
    assert isinstance(family, list) and all(event["type"].startswith("agent.") for event in family)
    assert parsed(folder, "events", "--json", "--type", "no.such.type") == []
    text = run_flotilla(folder, "events", "--type", "fleet.applied")
    assert "fleet.applied" in text.stdout and "agent.started" not in text.stdout


def test_follow_with_json_prints_one_object_per_line(folder: Path) -> None:
    follow = start_flotilla(folder, "events", "-F", "--json", "-n", "2", stderr=None)
    try:
        assert follow.stdout is not None
        lines = [follow.stdout.readline(), follow.stdout.readline()]
    finally:
        follow.terminate()
        follow.communicate(timeout=10)
    assert [json.loads(line)["seq"] > 0 for line in lines] == [True, True]


def test_dashboard_and_export_speak_json(folder: Path) -> None:
    address = parsed(folder, "dashboard", "--json")
    assert isinstance(address, dict) and address["url"].startswith(address["api"] + "/?token=")
    # The address is only written into the manifests (a documentation address: nothing dials it).
    url = "http://192.0.2.10:8420"
    exported = parsed(
        folder, "export", "kubernetes", "-o", str(folder / "k8s"), "--orchestrator-url", url, "--json"
    )
    assert isinstance(exported, dict) and exported["apply"] == f"kubectl apply -k {folder / 'k8s'}"
    assert all(Path(name).is_file() for name in exported["files"])

"""`ps -q` prints the agents' names alone; `logs --since` keeps the lines from a moment on."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from orchestrator.cli.log_since import lines_since, since_moment
from orchestrator.testing.cli import free_port, run_flotilla

FLEET = "version: 1\nfleet: quiet\ndefaults:\n  always_on: true\nagents:\n  alpha:\n    role: one\n  beta:\n    role: two\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("quiet")
    (folder / "fleet.yaml").write_text(FLEET)
    try:
        started = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v")


def test_ps_q_prints_only_the_names(folder: Path) -> None:
    quiet = run_flotilla(folder, "ps", "-q")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout == "alpha\nbeta\n"


def test_logs_since(folder: Path) -> None:
    everything = run_flotilla(folder, "logs", "alpha")
    assert everything.returncode == 0 and "started" in everything.stdout, everything.stderr
    recent = run_flotilla(folder, "logs", "alpha", "--since", "1h")
    assert recent.returncode == 0 and recent.stdout == everything.stdout
    future = run_flotilla(folder, "logs", "alpha", "--since", "2999-01-01 00:00")
    assert future.returncode == 0 and future.stdout == ""
    wrong = run_flotilla(folder, "logs", "alpha", "--since", "yesterday")
    assert wrong.returncode == 2 and "give a duration" in wrong.stderr


def test_unstamped_lines_go_with_the_line_before() -> None:
    lines = [
        "2026-12-03 09:00:00,001 INFO a: old\n",
        "Traceback of the old line\n",
        "2026-12-03 10:00:00,001 ERROR a: new\n",
        "Traceback of the new line\n",
    ]
    moment = since_moment("30m", datetime(2026, 12, 3, 10, 15))
    assert list(lines_since(lines, moment)) == lines[2:]


def test_openapi_json_is_served_without_a_token_and_docs_pages_are_not(folder: Path) -> None:
    import json as json_module

    import httpx

    from orchestrator.state.endpoint import read_endpoint
    from orchestrator.state.paths import StatePaths

    endpoint = read_endpoint(StatePaths.for_fleet_file(folder / "fleet.yaml"))
    assert endpoint is not None
    schema = httpx.get(f"{endpoint.url}/openapi.json", timeout=10)
    assert schema.status_code == 200
    paths = json_module.loads(schema.text)["paths"]
    assert "/api/v1/apply" in paths and "/v1/chat/completions" in paths
    assert httpx.get(f"{endpoint.url}/docs", timeout=10).status_code == 404
    assert httpx.get(f"{endpoint.url}/api/v1/fleet", timeout=10).status_code == 401

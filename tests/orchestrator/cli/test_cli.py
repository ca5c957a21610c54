"""`flotilla events` and `flotilla workspace ...` against a real orchestrator API over HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fastapi import FastAPI

from agent_runtime.workspace.versioned import CAPS, Workspace
from orchestrator.cli.operator import events, workspace
from orchestrator.events import EventType
from orchestrator.services import Services
from orchestrator.state.endpoint import Endpoint, write_endpoint
from orchestrator.testing.server import serve_app

REPO_ROOT = Path(__file__).resolve().parents[3]
FAKE_EDITOR = textwrap.dedent(
    """
    import os, sys
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        out.write(os.environ["FLT_TEST_NEW_TEXT"])
    """
)


@pytest.fixture
def running(app: FastAPI, services: Services, fleet_file: Path) -> Iterator[Path]:
    """The API served on loopback, with the endpoint file the CLI reads."""
    with serve_app(app) as url:
        write_endpoint(services.paths, Endpoint(url=url, token=services.operator_token, pid=os.getpid()))
        yield fleet_file
        services.paths.endpoint_file.unlink(missing_ok=True)


@pytest.fixture
def editor(tmp_path: Path) -> str:
    script = tmp_path / "fake_editor.py"
    script.write_text(FAKE_EDITOR)
    return f"{sys.executable} {script}"


def run(command: object, *args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(command, list(args), env=env, catch_exceptions=False)  # type: ignore[arg-type]


def alpha(services: Services) -> Workspace:
    return Workspace(services.paths.agent_dir("alpha"))


def test_ls_shows_fill_against_caps(running: Path) -> None:
    result = run(workspace, "ls", "alpha", "--file", str(running))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split()[:5] == ["FILE", "SIZE", "CAP", "FILL", "VERSION"]
    soul = next(line for line in lines if line.startswith("SOUL.md"))
    assert "4.0 KiB" in soul and "1%" in soul and "v1" in soul and "system" in soul


def test_cat_live_and_past_version(running: Path, services: Services) -> None:
    alpha(services).write("SOUL.md", "# alpha\n\nNew.\n", "agent")
    assert run(workspace, "cat", "alpha", "SOUL.md", "--file", str(running)).stdout == "# alpha\n\nNew.\n"
    old = run(workspace, "cat", "alpha", "soul", "--version", "1", "--file", str(running))
    assert old.stdout == "# alpha\n\nYou are alpha.\n"


def test_edit_saves_through_the_api(running: Path, services: Services, editor: str) -> None:
    result = run(
        workspace,
        "edit",
        "alpha",
        "USER.md",
        "--reason",
        "from the cli",
        "--file",
        str(running),
        env={"EDITOR": editor, "VISUAL": "", "FLT_TEST_NEW_TEXT": "prefers tables\n"},
    )
    assert result.exit_code == 0, result.output
    assert "saved as version 2" in result.stdout
    assert alpha(services).read("USER.md") == "prefers tables\n"
    last = alpha(services).history("USER.md")[-1]
    assert (last.author, last.reason) == ("operator", "from the cli")


def test_refused_edit_prints_the_reason_and_exits_1(running: Path, services: Services, editor: str) -> None:
    cap = CAPS["SOUL.md"]
    assert cap is not None
    before = alpha(services).read("SOUL.md")
    result = run(
        workspace,
        "edit",
        "alpha",
        "SOUL.md",
        "--file",
        str(running),
        env={"EDITOR": editor, "VISUAL": "", "FLT_TEST_NEW_TEXT": "z" * (cap + 1)},
    )
    assert result.exit_code == 1
    assert "refused" in result.stderr and f"cap of {cap} bytes" in result.stderr
    assert "HTTP 413" in result.stderr
    kept = Path(result.stderr.split("your text is kept in ")[1].strip())
    assert kept.read_text() == "z" * (cap + 1)
    kept.unlink()
    assert alpha(services).read("SOUL.md") == before


def test_edit_without_change_saves_nothing(running: Path, services: Services, editor: str) -> None:
    current = alpha(services).read("SOUL.md")
    result = run(
        workspace,
        "edit",
        "alpha",
        "SOUL.md",
        "--file",
        str(running),
        env={"EDITOR": editor, "VISUAL": "", "FLT_TEST_NEW_TEXT": current},
    )
    assert result.exit_code == 0
    assert "no change" in result.stderr
    assert len(alpha(services).history("SOUL.md")) == 1


def test_history_and_diff(running: Path, services: Services) -> None:
    alpha(services).write("MEMORY.md", "# Memory\n- likes tea\n", "agent", "flush")
    alpha(services).write("MEMORY.md", "# Memory\n- likes coffee\n", "job", "condensed")
    history = run(workspace, "history", "alpha", "MEMORY.md", "--file", str(running)).stdout.splitlines()
    assert history[0].split() == ["VERSION", "AUTHOR", "WHEN", "SIZE", "REASON"]
    assert history[2].split()[:2] == ["v2", "agent"] and history[2].endswith("flush")
    assert history[3].split()[:2] == ["v3", "job"]
    diff = run(workspace, "diff", "alpha", "MEMORY.md", "--file", str(running)).stdout
    assert "-- likes tea" in diff and "+- likes coffee" in diff
    first = run(workspace, "diff", "alpha", "MEMORY.md", "-a", "1", "-b", "2", "--file", str(running)).stdout
    assert "+- likes tea" in first


def test_unknown_agent_is_one_line_error(running: Path) -> None:
    result = CliRunner().invoke(workspace, ["ls", "ghost", "--file", str(running)])
    assert result.exit_code != 0
    assert "no agent 'ghost'" in str(result.exception)


def test_events_prints_recent(running: Path, services: Services) -> None:
    services.events.publish(EventType.AGENT_STARTED, agent="alpha", unit="u1")
    services.events.publish(EventType.BUDGET_WARNING, agent="beta", fraction=0.8)
    every = run(events, "--file", str(running)).stdout.splitlines()
    assert len(every) == 2
    assert "agent.started" in every[0] and "alpha" in every[0] and "unit=u1" in every[0]
    only_beta = run(events, "--agent", "beta", "--file", str(running)).stdout
    assert "budget.warning" in only_beta and "alpha" not in only_beta


def test_events_follow_streams_live(running: Path, services: Services) -> None:
    services.events.publish(EventType.AGENT_STARTED, agent="alpha")
    code = "from orchestrator.cli.operator import events; events()"
    with subprocess.Popen(
        [sys.executable, "-c", code, "--file", str(running), "-F", "-n", "1"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    ) as process:
        try:
            assert process.stdout is not None
            first = process.stdout.readline()
            assert "agent.started" in first
            services.events.publish(EventType.HEARTBEAT_SKIPPED, agent="beta", why="busy")
            live = process.stdout.readline()
            assert "heartbeat.skipped" in live and "why=busy" in live
        finally:
            process.terminate()
            process.wait(timeout=10)

"""`python -m agent_runtime` as a real process against a stub of the orchestrator's routes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_runtime.protocol import PROTOCOL_VERSION, InboxItem, ItemKind
from orchestrator.testing.server import serve_app
from tests.agent_runtime.conftest import REPO_ROOT, TOKEN, make_config, write_token
from tests.agent_runtime.fakes import FakeOrchestrator, Reply, last_text

WAIT_S = 30.0


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def agent_env(base_url: str, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOTILLA_")}
    env.update(
        FLOTILLA_URL=base_url,
        FLOTILLA_AGENT="alpha",
        FLOTILLA_DATA=str(data_dir),
        PYTHONPATH=str(REPO_ROOT),
    )
    return env


@pytest.fixture
def orchestrator() -> Iterator[tuple[FakeOrchestrator, str]]:
    fake = FakeOrchestrator(
        make_config(), lambda body: Reply(f"Answer to: {last_text(body).splitlines()[-1]}"), TOKEN
    )
    fake.config_failures = 2  # the agent must keep asking until the orchestrator answers
    with serve_app(fake.app) as base_url:
        yield fake, base_url


def test_agent_process_answers_an_operator_message_and_stops_cleanly(
    orchestrator: tuple[FakeOrchestrator, str], tmp_path: Path
) -> None:
    fake, base_url = orchestrator
    data_dir = tmp_path / "data"
    write_token(data_dir)
    env = agent_env(base_url, data_dir)
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_runtime"], env=env, cwd=tmp_path, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for(lambda: any(c.state == "idle" for c in fake.checkins), "an idle check-in")
        assert fake.config_calls >= 3
        checkin = fake.checkins[-1]
        assert checkin.pid == process.pid and checkin.rss_bytes and checkin.protocol == PROTOCOL_VERSION
        fake.put(
            InboxItem(
                id="item-1",
                kind=ItemKind.OPERATOR_MESSAGE,
                created_at=datetime.now(UTC),
                sender="operator",
                text="What is the plan?",
            )
        )
        wait_for(lambda: "item-1" in fake.results, "the reply")
        result = fake.results["item-1"]
        assert result.ok and result.text == "Answer to: What is the plan?"
        assert "".join(fake.progress["item-1"]) == result.text
        wait_for(lambda: len(fake.runs) == 1, "the run record")
        assert fake.runs[0].outcome.value == "ok"

        health = subprocess.run(
            [sys.executable, "-m", "agent_runtime.health"], env=env, cwd=tmp_path, check=False
        )
        assert health.returncode == 0

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=WAIT_S) == 0
        assert fake.checkins[-1].state == "stopping"
        assert (data_dir / "history").is_dir() and list((data_dir / "history").glob("*.jsonl"))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        assert process.stderr is not None
        process.stderr.close()


def test_missing_settings_exit_with_a_clear_message(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOTILLA_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "agent_runtime"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "FLOTILLA_URL must be the orchestrator's http(s) URL" in done.stderr
    assert "Traceback" not in done.stderr
    env.update(FLOTILLA_URL="http://127.0.0.1:9", FLOTILLA_AGENT="alpha", FLOTILLA_DATA=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-m", "agent_runtime"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "no token at" in done.stderr and "Traceback" not in done.stderr


def test_health_check_needs_a_fresh_alive_file(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOTILLA_")}
    env.update(PYTHONPATH=str(REPO_ROOT), FLOTILLA_DATA=str(tmp_path))
    check = [sys.executable, "-m", "agent_runtime.health"]
    assert subprocess.run(check, env=env, capture_output=True, check=False).returncode == 1
    alive = tmp_path / ".runtime" / "alive"
    alive.parent.mkdir()
    alive.touch()
    assert subprocess.run(check, env=env, capture_output=True, check=False).returncode == 0
    stale = time.time() - 31
    os.utime(alive, (stale, stale))
    assert subprocess.run(check, env=env, capture_output=True, check=False).returncode == 1


def test_an_unexpected_failure_ends_the_process_for_a_restart(
    orchestrator: tuple[FakeOrchestrator, str], tmp_path: Path
) -> None:
    fake, base_url = orchestrator
    fake.config_failures = 0
    data_dir = tmp_path / "data"
    write_token(data_dir)
    (data_dir / "history").write_text("not a folder", encoding="utf-8")  # the turn log cannot be written
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_runtime"],
        env=agent_env(base_url, data_dir),
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        fake.put(
            InboxItem(
                id="item-x", kind=ItemKind.OPERATOR_MESSAGE, created_at=datetime.now(UTC), sender="operator"
            )
        )
        assert process.wait(timeout=WAIT_S) == 1
        assert process.stderr is not None
        log = process.stderr.read()
        assert "the work loop stopped unexpectedly" in log and "FileExistsError" in log
        assert "item-x" not in fake.results  # not acknowledged: the orchestrator redelivers it
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        assert process.stderr is not None
        process.stderr.close()


def test_idle_agent_restarts_in_place_to_release_memory_and_keeps_its_context(
    orchestrator: tuple[FakeOrchestrator, str], tmp_path: Path
) -> None:
    fake, base_url = orchestrator
    fake.config_failures = 0
    data_dir = tmp_path / "data"
    write_token(data_dir)
    env = {**agent_env(base_url, data_dir), "FLOTILLA_IDLE_RELEASE_S": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_runtime"], env=env, cwd=tmp_path, stderr=subprocess.DEVNULL
    )
    try:
        fake.put(
            InboxItem(
                id="first",
                kind=ItemKind.OPERATOR_MESSAGE,
                created_at=datetime.now(UTC),
                sender="operator",
                text="I am Ada",
            )
        )
        wait_for(lambda: "first" in fake.results, "the first reply")
        calls_before = fake.config_calls
        wait_for(lambda: fake.config_calls > calls_before, "the in-place restart")
        wait_for(lambda: fake.checkins[-1].state == "idle", "a check-in of the new incarnation")
        after = fake.checkins[-1]
        assert after.pid == process.pid and process.poll() is None
        assert after.turns == 1  # carried over
        fake.put(
            InboxItem(
                id="second",
                kind=ItemKind.OPERATOR_MESSAGE,
                created_at=datetime.now(UTC),
                sender="operator",
                text="Who am I?",
            )
        )
        wait_for(lambda: "second" in fake.results, "the second reply")
        contents = [m["content"] for m in fake.requests[-1]["messages"]]
        assert any("I am Ada" in c for c in contents)  # the context came back from disk
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=WAIT_S)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()

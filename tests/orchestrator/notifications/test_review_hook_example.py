"""The review-hook example, run as its header says (process runtime, its own script signing the
event with openssl and posting it with curl), with its receiver on an ephemeral port."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.testing.cli import free_port, run_flotilla, wait_for
from tests.orchestrator.notifications.servers import HttpReceiver

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "review-hook"
SECRET = secrets.token_hex(16)


@pytest.fixture
def receiver() -> Iterator[HttpReceiver]:
    running = HttpReceiver().start()
    try:
        yield running
    finally:
        running.stop()


def send_pull_request(folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", str(folder / "send-pull-request.sh")],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.skipif(not (shutil.which("openssl") and shutil.which("curl")), reason="needs openssl and curl")
def test_a_pull_request_event_wakes_the_reviewer_which_notifies_the_review_room(
    tmp_path: Path, receiver: HttpReceiver
) -> None:
    folder = tmp_path / "review-hook"
    shutil.copytree(EXAMPLE, folder)
    fleet = folder / "fleet.yaml"
    fleet.write_text(fleet.read_text().replace("http://127.0.0.1:18791", receiver.url))
    env = {**os.environ, "REVIEW_HOOK_SECRET": SECRET}
    try:
        started = run_flotilla(
            folder, "up", "-d", "--runtime", "process", "--port", str(free_port()), env=env
        )
        assert started.returncode == 0, started.stdout + started.stderr
        sent = send_pull_request(folder, env)
        assert sent.returncode == 0 and '"item_id"' in sent.stdout, sent.stdout + sent.stderr
        wait_for(lambda: bool(receiver.on("/review-room")), "the reviewer's notification", deadline_s=90)
        replayed = send_pull_request(folder, env)
        assert replayed.returncode == 1, replayed.stdout + replayed.stderr
        assert '"replayed"' in replayed.stdout and "error: the hook did not take" in replayed.stderr
    finally:
        run_flotilla(folder, "down", "-v", env=env)
    note = receiver.on("/review-room")[0].json()
    assert note["agent"] == "reviewer"
    assert note["text"] == "harbour/quay #12 Fix the tide table for leap years: check the February rows first"

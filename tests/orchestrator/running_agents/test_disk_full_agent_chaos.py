"""Tool calls on a full disk, on the real Docker daemon: the agent's /data (a 16 MiB volume) is
filled from inside the container, then a tool call that fails, a good one and a memory save
arrive. The agent answers all three without a restart (a save the disk refuses is a tool error
that says the disk is full), and the operator's history shows the three turns."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.images.build import ImageBuildResult
from orchestrator.testing.cli import fleet_status, free_port, run_flotilla, wait_for

pytestmark = pytest.mark.docker

FLEET = """\
version: 1
fleet: {name}
defaults:
  always_on: true
agents:
  filler:
    role: an agent whose disk fills up
    resources:
      disk: 16m
"""
FILL = """
import errno
with open("/data/filler.bin", "wb", buffering=0) as out:
    for _ in range(1024):
        try:
            out.write(b"x" * 65536)
        except OSError as full:
            assert full.errno in (errno.ENOSPC, errno.EDQUOT), full
            break
    for _ in range(65536):
        try:
            out.write(b"x" * 512)
        except OSError:
            break
"""
FAILING = 'call memory_save {"bogus": 1}'
GOOD = 'call list_files {"path": "."}'
SAVE = 'call memory_save {"text": "remember: the harbour opens at six"}'


def flotilla(folder: Path, *args: str) -> str:
    result = run_flotilla(folder, *args, timeout=180)
    assert result.returncode == 0, f"flotilla {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture
def fleet(agent_image: ImageBuildResult, tmp_path: Path) -> Iterator[Path]:
    name = f"flt-test-fulltools-{secrets.token_hex(3)}"
    (tmp_path / "fleet.yaml").write_text(FLEET.format(name=name))
    try:
        flotilla(
            tmp_path,
            "up",
            "-d",
            "--runtime",
            "docker",
            "--port",
            str(free_port()),
            "--image",
            agent_image.tag,
        )
        yield tmp_path
    finally:
        run_flotilla(tmp_path, "down", "-v")


def test_tool_calls_on_a_full_disk_are_answered_refused_clearly_and_kept_in_history(fleet: Path) -> None:
    assert "before the disk fills" in flotilla(fleet, "send", "filler", "before the disk fills")
    flotilla(fleet, "exec", "filler", "--", "python3", "-c", FILL)

    failing = flotilla(fleet, "send", "filler", FAILING)
    assert "memory_save returned: ERROR: invalid arguments" in failing
    good = flotilla(fleet, "send", "filler", GOOD)
    assert "list_files returned:" in good and "ERROR" not in good
    saved = flotilla(fleet, "send", "filler", SAVE)
    # SQLite may find room in pages its files already hold; if not, the refusal says why.
    assert "memory_save returned:" in saved
    assert "saved as fact" in saved or "was refused: the agent's disk is full" in saved

    status = fleet_status(fleet)["filler"]
    assert status["restarts"] == 0 and status["dead_letters"] == 0
    wait_for(lambda: fleet_status(fleet)["filler"].get("disk_full") is True, "the status to say so", 60)
    shown = flotilla(fleet, "ps")
    assert "disk full" in shown and "free)" in shown  # with the space left

    history = json.loads(flotilla(fleet, "history", "filler", "--json", "-n", "20"))
    asked = [
        message["content"]
        for turn in history["turns"]
        for message in turn["messages"]
        if message["role"] == "user"
    ]
    for text in (FAILING, GOOD, SAVE):
        assert sum(text in content for content in asked) == 1, (text, asked)
    assert "the work loop failed" not in flotilla(fleet, "logs", "filler")

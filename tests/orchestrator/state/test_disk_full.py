"""A full disk under a running fleet: writes answer 507 with the path and the space left, reads
keep working, and everything works again once space is freed.

The fleet folder sits on a small tmpfs of its own (mounting one needs root; skipped otherwise).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.testing.cli import free_port, run_flotilla

REPO = Path(__file__).resolve().parents[3]


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with filler.open("wb") as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * (1024 * 1024))
            out.flush()
    with contextlib.suppress(OSError), filler.open("ab") as out:
        while True:
            out.write(b"\0" * 4096)
            out.flush()
    return filler


@pytest.fixture
def fleet_on_small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(disk)], check=False)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    folder = disk / "fleet"
    folder.mkdir()
    shutil.copytree(REPO / "examples", folder / "examples")
    (folder / "fleet.yaml").write_text(
        (REPO / "fleet.yaml").read_text().replace("fleet: demo", "fleet: diskfull")
    )
    try:
        started = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        (disk / "filler").unlink(missing_ok=True)
        run_flotilla(folder, "down")
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_writes_on_a_full_disk_answer_507_and_reads_keep_working(
    fleet_on_small_disk: Path, tmp_path: Path
) -> None:
    folder = fleet_on_small_disk
    filler = fill(folder.parent)

    sent = run_flotilla(folder, "send", "writer", "hello on a full disk")
    assert sent.returncode == 1
    assert "HTTP 507" in sent.stderr and "no space left" in sent.stderr
    assert str(folder / ".flotilla" / "state.db") in sent.stderr and "free_bytes:" in sent.stderr

    text = tmp_path / "memory.md"
    text.write_text("a note\n")
    edited = run_flotilla(
        folder, "workspace", "edit", "writer", "MEMORY.md", env=os.environ | {"EDITOR": f"cp {text}"}
    )
    assert edited.returncode == 1 and "HTTP 507" in edited.stderr
    assert "workspace/MEMORY.md" in edited.stderr

    assert run_flotilla(folder, "ps").returncode == 0
    assert "friendly prose" in run_flotilla(folder, "workspace", "cat", "writer", "SOUL.md").stdout

    filler.unlink()
    again = run_flotilla(folder, "send", "writer", "hello once there is room")
    assert again.returncode == 0, again.stderr
    assert "hello once there is room" in again.stdout


@pytest.fixture
def fleet_with_a_full_workspace_disk(tmp_path: Path) -> Iterator[Path]:
    """The writer's operator copy on a tiny tmpfs of its own; state.db has room."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    folder = tmp_path / "fleet"
    copy = folder / ".flotilla" / "agents" / "writer"
    copy.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(copy)], check=False)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    shutil.copytree(REPO / "examples", folder / "examples")
    (folder / "fleet.yaml").write_text(
        (REPO / "fleet.yaml").read_text().replace("fleet: demo", "fleet: channelfull")
    )
    try:
        started = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        (copy / "filler").unlink(missing_ok=True)
        run_flotilla(folder, "down")
        subprocess.run(["umount", "-l", str(copy)], check=False)


def test_an_agents_write_on_a_full_disk_is_refused_over_its_channel_with_the_path(
    fleet_with_a_full_workspace_disk: Path,
) -> None:
    folder = fleet_with_a_full_workspace_disk
    copy = folder / ".flotilla" / "agents" / "writer"
    filler = fill(copy)
    write = 'call update_workspace {"name": "MEMORY.md", "content": "a note written on a full disk"}'

    sent = run_flotilla(folder, "send", "writer", write)

    # The agent's tool failed with the orchestrator's reason; its link stayed open to answer.
    assert sent.returncode == 0, sent.stderr
    assert "MEMORY.md was not written: the orchestrator's disk is full" in sent.stdout
    history = "".join(
        p.read_text() for p in (folder / ".flotilla" / "agent-data" / "writer").rglob("*.jsonl")
    )
    assert "no space left on the device of" in history and str(copy) in history
    assert "(free: 0 bytes)" in history
    assert (
        "a note written on a full disk"
        not in run_flotilla(folder, "workspace", "cat", "writer", "MEMORY.md").stdout
    )
    assert run_flotilla(folder, "ps").returncode == 0
    assert "friendly prose" in run_flotilla(folder, "workspace", "cat", "writer", "SOUL.md").stdout

    filler.unlink()
    again = run_flotilla(folder, "send", "writer", write)
    assert again.returncode == 0 and "saved as version" in again.stdout, again.stdout + again.stderr
    assert (
        "a note written on a full disk"
        in run_flotilla(folder, "workspace", "cat", "writer", "MEMORY.md").stdout
    )

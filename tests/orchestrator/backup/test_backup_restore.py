"""Backup of a running example fleet on the real Docker daemon, restored on a "fresh machine".

The fleet is backed up while it runs (each agent snapshots its own memory.db inside its
container and streams it over its link), its storage is deleted (`down -v`), the archive is
restored into an empty folder and started there: the agents recall their facts, the ledger
continues and an item that was still waiting in a paused agent's inbox is delivered.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sqlite3
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.images.build import ImageBuildResult
from orchestrator.testing.cli import free_port, run_flotilla, wait_for

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[3]
FACT = "The ferry leaves at 7:15 from pier 3"
WAITING = "a message that waits in the paused writer's inbox"


def unique(topic: str) -> str:
    return f"flt-test-{topic}-{secrets.token_hex(3)}"


def flotilla(folder: Path, *args: str, timeout: float = 300) -> str:
    result = run_flotilla(folder, *args, timeout=timeout)
    assert result.returncode == 0, f"flotilla {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def up(folder: Path, image: str) -> None:
    flotilla(folder, "up", "-d", "--runtime", "docker", "--port", str(free_port()), "--image", image)


def ledger_rows(folder: Path) -> int:
    with sqlite3.connect(folder / ".flotilla" / "state.db") as db:
        return int(db.execute("SELECT COUNT(*) FROM gateway_usage").fetchone()[0])


def waiting_in(folder: Path, agent: str) -> list[dict[str, Any]]:
    """The items still waiting in the agent's inbox."""
    out = flotilla(folder, "inbox", "list", agent, "--json")
    items: list[dict[str, Any]] = json.loads(out)
    return items


@pytest.fixture(scope="module")
def moved(
    agent_image: ImageBuildResult, tmp_path_factory: pytest.TempPathFactory, docker_client: Any
) -> Iterator[dict[str, Any]]:
    name = unique("backup")
    root = tmp_path_factory.mktemp("backup")
    old, new = root / "old", root / "new"
    old.mkdir()
    shutil.copytree(REPO / "examples", old / "examples")
    (old / "fleet.yaml").write_text(
        (REPO / "fleet.yaml").read_text().replace("fleet: demo", f"fleet: {name}")
    )
    (old / ".env").write_text("OPENAI_API_KEY=sk-test-never-in-a-backup\n")
    facts: dict[str, Any] = {"old": old, "new": new, "archive": root / "fleet.tar", "image": agent_image.tag}
    try:
        up(old, agent_image.tag)
        flotilla(old, "memory", "add", "writer", FACT)
        flotilla(old, "send", "researcher", 'call memory_save {"text": "The harbour master is Ines Duarte"}')
        flotilla(old, "pause", "writer")
        waiting = run_flotilla(old, "send", "--timeout", "3", "writer", WAITING)
        assert waiting.returncode != 0  # paused: the item waits
        facts["ledger_before"] = ledger_rows(old)
        facts["secrets"] = [p.read_text() for p in (old / ".flotilla" / "tokens").iterdir()]
        facts["secrets"] += [(old / ".flotilla" / "operator.token").read_text(), "sk-test-never-in-a-backup"]
        started = time.monotonic()
        facts["backup_out"] = flotilla(old, "backup", "-o", str(facts["archive"]), "--json")
        facts["backup_s"] = time.monotonic() - started
        flotilla(old, "down", "-v")
        started = time.monotonic()
        verified = run_flotilla(
            facts["archive"].parent, "verify", str(facts["archive"]), file=None, timeout=300
        )
        facts["verify_s"] = time.monotonic() - started
        facts["verify"] = verified
        new.mkdir()
        started = time.monotonic()
        facts["restore"] = run_flotilla(new, "restore", str(facts["archive"]))
        facts["restore_s"] = time.monotonic() - started
        up(new, agent_image.tag)
        facts["ledger_restored"] = ledger_rows(new)
        yield facts
    finally:
        for folder in (new, old):
            if (folder / "fleet.yaml").exists():
                run_flotilla(folder, "down", "-v")


def test_the_backup_verifies_and_holds_each_agents_memory_but_no_secret(moved: dict[str, Any]) -> None:
    result = json.loads(moved["backup_out"])
    assert [(a["name"], a["complete"]) for a in result["agents"]] == [
        ("coordinator", True),
        ("researcher", True),
        ("writer", True),
    ]
    assert moved["verify"].returncode == 0, moved["verify"].stdout + moved["verify"].stderr
    archive: Path = moved["archive"]
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    assert {"agents/writer/own/memory.db", "agents/researcher/own/memory.db", "state/state.db"} <= names
    assert "fleet/examples/interfaces/writer.md" in names
    raw = archive.read_bytes()
    for secret in moved["secrets"]:
        assert secret.strip().encode() not in raw
    print(
        f"\nbackup {moved['backup_s']:.2f}s, verify {moved['verify_s']:.2f}s, restore {moved['restore_s']:.2f}s, "
        f"archive {archive.stat().st_size} bytes"
    )


def test_restore_refuses_a_folder_that_is_not_empty(moved: dict[str, Any]) -> None:
    assert moved["restore"].returncode == 0, moved["restore"].stderr
    again = run_flotilla(moved["new"], "restore", str(moved["archive"]))
    assert again.returncode == 1 and "not empty" in again.stderr


def test_restored_agents_recall_their_facts(moved: dict[str, Any]) -> None:
    new: Path = moved["new"]
    assert FACT in flotilla(new, "memory", "search", "writer", "ferry", "--json")
    reply = flotilla(new, "send", "researcher", 'call memory_search {"query": "harbour master"}')
    assert "Ines Duarte" in reply
    assert not (new / ".flotilla" / "restore" / "writer").exists()  # carried in, then cleared


def test_the_ledger_continues_and_the_waiting_item_is_delivered(moved: dict[str, Any]) -> None:
    new: Path = moved["new"]
    assert moved["ledger_restored"] == moved["ledger_before"]
    assert [item["text"] for item in waiting_in(new, "writer")] == [WAITING]
    flotilla(new, "resume", "writer")
    wait_for(
        lambda: not waiting_in(new, "writer"),
        "the waiting item to be answered",
        deadline_s=120,
    )
    assert ledger_rows(new) > moved["ledger_before"]


def test_one_agent_is_restored_into_its_existing_storage(moved: dict[str, Any], tmp_path: Path) -> None:
    new: Path = moved["new"]
    archive = tmp_path / "writer.tar"
    flotilla(new, "backup", "--agent", "writer", "-o", str(archive))
    flotilla(new, "memory", "add", "writer", "The lighthouse is painted green")
    text = tmp_path / "memory.md"
    text.write_text("written after the backup\n")
    edited = run_flotilla(
        new, "workspace", "edit", "writer", "MEMORY.md", env=os.environ | {"EDITOR": f"cp {text}"}
    )
    assert edited.returncode == 0, edited.stderr
    flotilla(new, "down")  # the writer's volume stays
    refused = run_flotilla(new, "restore", str(archive))
    assert refused.returncode == 1 and "holds agent writer only" in refused.stderr
    flotilla(new, "restore", str(archive), "--agent", "writer", "--force")
    up(new, moved["image"])
    found = flotilla(new, "memory", "search", "writer", "ferry lighthouse", "--json")
    assert FACT in found and "lighthouse" not in found
    assert "written after the backup" not in flotilla(new, "workspace", "cat", "writer", "MEMORY.md")

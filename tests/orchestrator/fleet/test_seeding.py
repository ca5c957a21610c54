"""fleet.yaml's seeds reach a running agent's workspace, without overwriting what someone changed
since: against a real orchestrator on the process runtime, through the CLI."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.testing.cli import free_port, run_flotilla

FLEET = """\
version: 1
fleet: seeds
defaults:
  always_on: true
agents:
  scribe:
    role: keeps the minutes
    soul: You are calm.
    instructions: Write short minutes.
"""


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    started = run_flotilla(tmp_path, "up", "-d", "--runtime", "process", "--port", str(free_port()))
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield tmp_path
    finally:
        run_flotilla(tmp_path, "down", "-v")


def soul(folder: Path) -> str:
    return run_flotilla(folder, "workspace", "cat", "scribe", "SOUL.md").stdout


def history(folder: Path) -> list[dict[str, object]]:
    result = run_flotilla(folder, "workspace", "history", "scribe", "SOUL.md", "--json")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    return list(found["versions"] if isinstance(found, dict) else found)


def unit_pid(folder: Path) -> int:
    record = next((folder / ".flotilla" / "process" / "units").glob("*.json"))
    return int(json.loads(record.read_text())["pid"])


def edit_fleet(folder: Path, old: str, new: str) -> None:
    path = folder / "fleet.yaml"
    path.write_text(path.read_text().replace(old, new))


def test_a_changed_seed_reaches_the_running_agent_without_a_restart(fleet: Path) -> None:
    assert "You are calm." in soul(fleet)
    pid = unit_pid(fleet)
    edit_fleet(fleet, "You are calm.", "You are calm and exact.")
    dry = run_flotilla(fleet, "apply", "--dry-run")
    assert dry.returncode == 5 and "seed     scribe: SOUL.md from fleet.yaml" in dry.stdout
    assert "You are calm." in soul(fleet) and "exact" not in soul(fleet)  # a dry run changes nothing
    applied = run_flotilla(fleet, "apply")
    assert applied.returncode == 0, applied.stderr
    assert "You are calm and exact." in soul(fleet)
    assert history(fleet)[-1]["author"] == "fleet.yaml"
    assert unit_pid(fleet) == pid  # the agent kept running
    assert run_flotilla(fleet, "apply", "--dry-run").returncode == 0  # nothing left to do


def test_a_file_changed_since_it_was_seeded_is_not_overwritten(fleet: Path) -> None:
    write = run_flotilla(
        fleet,
        "workspace",
        "edit",
        "scribe",
        "SOUL.md",
        env={
            **__import__("os").environ,
            "EDITOR": f"{sys.executable} -c \"import sys; open(sys.argv[1], 'w').write('# scribe\\n\\nThe operator rewrote this.\\n')\"",
        },
        timeout=60,
    )
    assert write.returncode == 0, write.stdout + write.stderr
    edit_fleet(fleet, "You are calm.", "You are bold.")
    dry = run_flotilla(fleet, "apply", "--dry-run")
    assert dry.returncode == 5
    assert "conflict scribe: SOUL.md changed since fleet.yaml seeded it" in dry.stdout
    applied = run_flotilla(fleet, "apply")
    assert "conflict scribe: SOUL.md" in applied.stdout
    assert "The operator rewrote this." in soul(fleet)
    events = run_flotilla(fleet, "events", "--json", "-n", "50").stdout
    assert "workspace.seed_conflict" in events
    # Applied: the conflict stands, but nothing is pending, in the text and the JSON plan alike.
    again = run_flotilla(fleet, "apply", "--dry-run")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "conflict scribe: SOUL.md" in again.stdout and "which no apply changes" in again.stdout
    plan = json.loads(run_flotilla(fleet, "apply", "--dry-run", "--json").stdout)
    assert plan["changed"] is False
    assert plan["seeds"] == [{"agent": "scribe", "file": "SOUL.md", "status": "conflict"}]
    forced = run_flotilla(fleet, "apply", "--force-seed", "scribe", "SOUL.md")
    assert forced.returncode == 0, forced.stderr
    assert "You are bold." in soul(fleet)
    refused = run_flotilla(fleet, "apply", "--force-seed", "ghost", "SOUL.md")
    assert refused.returncode == 1 and "name an agent of the fleet" in refused.stderr

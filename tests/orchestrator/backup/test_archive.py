"""Backup archives: what goes in (and what never does), verify's verdicts, restore's refusals.

The agents' side is the real `AgentService` answering in-process, as it answers over its
channel; the Docker test (tests/orchestrator/backup/test_backup_restore.py) runs the whole path.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import sqlite3
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.process.settings import Settings
from agent_runtime.protocol import AgentOp, AgentRequest, ErrorBody
from agent_runtime.transport.serving import AgentService
from orchestrator.backup.archive import BackupRefused, FleetSources, take_backup
from orchestrator.backup.manifest import MANIFEST_NAME, Manifest
from orchestrator.backup.restore import RestoreRefused, pending_restore, restore_archive
from orchestrator.backup.schedule import ScheduledBackups, backup_folder, scheduled_backups, seconds_until_due
from orchestrator.backup.snapshot import Model, SnapshotFailed
from orchestrator.backup.verify import Verdict, verify_archive
from orchestrator.config.backup import BackupSchedule
from orchestrator.control.auth import TokenStore
from orchestrator.state.db import Database
from orchestrator.state.paths import StatePaths

AGENTS = ("alpha", "beta")
FLEET_YAML = """version: 1
fleet: demo
agents:
  alpha:
    interface: interfaces/alpha.md
  beta: {}
"""


class InProcessAgents:
    """Answers as each agent's service does; an agent in `silent` cannot be reached."""

    def __init__(self, root: Path) -> None:
        self.services = {
            name: AgentService(
                Settings(orchestrator_url="http://127.0.0.1:9", agent=name, data_dir=root / name),
                lambda: None,
                lambda: "",
            )
            for name in AGENTS
        }
        self.silent: set[str] = set()

    async def __call__(self, agent: str, op: AgentOp, body: dict[str, Any], model: type[Model]) -> Model:
        if agent in self.silent:
            raise SnapshotFailed(f"agent {agent} is not connected")
        status, answer = self.services[agent].answer(AgentRequest(request=1, op=op, body=body))
        if status >= 400:
            raise SnapshotFailed(ErrorBody.model_validate(answer).message)
        return model.model_validate(answer)


def make_fleet(root: Path) -> tuple[FleetSources, InProcessAgents]:
    folder = root / "fleet"
    (folder / "interfaces").mkdir(parents=True)
    (folder / "fleet.yaml").write_text(FLEET_YAML)
    (folder / "interfaces" / "alpha.md").write_text("# alpha\n")
    (folder / ".env").write_text("OPENAI_API_KEY=sk-never-in-a-backup\n")
    paths = StatePaths(folder / ".flotilla")
    paths.ensure()
    db = Database(paths.db)
    tokens = TokenStore(db)
    (paths.root / "operator.token").write_text(tokens.mint_operator())
    paths.tokens.mkdir()
    for agent in AGENTS:
        (paths.tokens / agent).write_text(tokens.mint(agent))
        workspace = paths.workspace(agent)
        workspace.mkdir(parents=True)
        (workspace / "SOUL.md").write_text(f"I am {agent}.\n")
        (paths.agent_dir(agent) / "versions" / "SOUL").mkdir(parents=True)
        (paths.agent_dir(agent) / "versions" / "SOUL" / "000001.md").write_text(f"I am {agent}.\n")
    db.execute("CREATE TABLE ledger (spent REAL)")
    db.execute("INSERT INTO ledger VALUES (1.25)")
    db.close()
    agents = InProcessAgents(root / "volumes")
    for agent in AGENTS:
        own = root / "volumes" / agent
        (own / "history").mkdir(parents=True)
        (own / "history" / "2026-12-01.jsonl").write_text(f'{{"turn": "{agent}"}}\n')
        with sqlite3.connect(own / "memory.db") as memory:
            memory.execute("CREATE TABLE facts (text TEXT)")
            memory.execute("INSERT INTO facts VALUES (?)", (f"{agent} knows the ferry leaves at 7:15",))
    return FleetSources("demo", folder / "fleet.yaml", paths, AGENTS), agents


def backup(tmp_path: Path, **options: Any) -> tuple[Path, FleetSources]:
    sources, agents = make_fleet(tmp_path)
    silent = options.pop("silent", None)
    if silent:
        agents.silent.add(silent)
    out = tmp_path / "backup.tar"
    asyncio.run(take_backup(sources, agents, out, **options))
    return out, sources


def manifest_of(archive: Path) -> Manifest:
    with tarfile.open(archive) as tar:
        handle = tar.extractfile(MANIFEST_NAME)
        assert handle is not None
        return Manifest.model_validate_json(handle.read())


def test_a_backup_holds_the_fleet_and_verifies(tmp_path: Path) -> None:
    archive, _ = backup(tmp_path)
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert names[0] == MANIFEST_NAME
    assert {
        "fleet/fleet.yaml",
        "fleet/interfaces/alpha.md",
        "state/state.db",
        "agents/alpha/operator/workspace/SOUL.md",
        "agents/alpha/operator/versions/SOUL/000001.md",
        "agents/alpha/own/memory.db",
        "agents/beta/own/history/2026-12-01.jsonl",
    } <= set(names)
    manifest = manifest_of(archive)
    assert manifest.formats.fleet_file == 1 and manifest.formats.state_schema == 0
    assert [(a.name, a.complete, a.has_memory) for a in manifest.agents] == [
        ("alpha", True, True),
        ("beta", True, True),
    ]
    report = verify_archive(archive)
    assert report.verdict == Verdict.OK, report.problems
    assert report.checked_databases == 3


def test_no_secret_is_in_the_archive(tmp_path: Path) -> None:
    archive, sources = backup(tmp_path)
    raw = archive.read_bytes()
    secrets = [(sources.paths.root / "operator.token").read_text()]
    secrets += [(sources.paths.tokens / agent).read_text() for agent in AGENTS]
    for secret in [*secrets, "sk-never-in-a-backup"]:
        assert secret.encode() not in raw
    with tarfile.open(archive) as tar:
        assert not [n for n in tar.getnames() if ".env" in n or "token" in n]
        state = tar.extractfile("state/state.db")
        assert state is not None
        copy = tmp_path / "copy.db"
        copy.write_bytes(state.read())
    with sqlite3.connect(copy) as db:
        assert db.execute("SELECT COUNT(*) FROM principal_tokens").fetchone()[0] == 0
        assert db.execute("SELECT spent FROM ledger").fetchone()[0] == 1.25


def _rewrite(archive: Path, change: Any) -> None:
    """Rewrite the archive member by member; change(name, data) returns the new data or None."""
    with tarfile.open(archive) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]  # type: ignore[union-attr]
    with tarfile.open(archive, "w") as tar:
        for member, data in members:
            new = change(member.name, data)
            if new is None:
                continue
            member.size = len(new)
            tar.addfile(member, io.BytesIO(new))


def test_a_damaged_member_is_found(tmp_path: Path) -> None:
    archive, _ = backup(tmp_path)
    _rewrite(
        archive,
        lambda name, data: data.replace(b"7:15", b"7:16") if name.endswith("alpha/own/memory.db") else data,
    )
    report = verify_archive(archive)
    assert report.verdict == Verdict.DAMAGED
    assert any("agents/alpha/own/memory.db" in p.message and "SHA-256" in p.message for p in report.problems)


def test_a_database_that_fails_its_integrity_check_is_found(tmp_path: Path) -> None:
    archive, _ = backup(tmp_path)
    manifest = manifest_of(archive)
    damaged = b""

    def garble(name: str, data: bytes) -> bytes:
        nonlocal damaged
        if name == "agents/beta/own/memory.db":
            damaged = data[:4096] + b"\xff" * (len(data) - 4096)
            return damaged
        return data

    _rewrite(archive, garble)
    # The sums are made to match, as if the database had been damaged before the backup.
    entry = next(e for e in manifest.entries if e.path == "agents/beta/own/memory.db")
    entry.sha256, entry.size = hashlib.sha256(damaged).hexdigest(), len(damaged)
    _rewrite(
        archive, lambda name, data: manifest.model_dump_json().encode() if name == MANIFEST_NAME else data
    )
    report = verify_archive(archive)
    assert report.verdict == Verdict.DAMAGED
    assert any("integrity" in p.message and "beta" in p.message for p in report.problems), report.problems


def test_a_missing_member_a_truncated_archive_and_a_newer_format_are_named(tmp_path: Path) -> None:
    archive, _ = backup(tmp_path)
    original = archive.read_bytes()
    _rewrite(archive, lambda name, data: None if name == "fleet/fleet.yaml" else data)
    report = verify_archive(archive)
    assert report.verdict == Verdict.DAMAGED
    assert any("fleet/fleet.yaml: in the manifest but missing" in p.message for p in report.problems)

    archive.write_bytes(original[: len(original) // 2])
    assert verify_archive(archive).verdict == Verdict.UNREADABLE

    archive.write_bytes(original)

    def newer(name: str, data: bytes) -> bytes:
        if name != MANIFEST_NAME:
            return data
        body = json.loads(data)
        body["format_version"] = 99
        body["a_field_of_format_99"] = True
        return json.dumps(body).encode()

    _rewrite(archive, newer)
    report = verify_archive(archive)
    assert report.verdict == Verdict.UNREADABLE and "newer release" in report.problems[0].message
    assert verify_archive(tmp_path / "nothing.tar").verdict == Verdict.UNREADABLE


def test_an_archive_of_format_1_still_verifies(tmp_path: Path) -> None:
    """Format 1 had no `stopped` field on an agent's part; this release still reads it."""
    archive, _ = backup(tmp_path)

    def as_format_1(name: str, data: bytes) -> bytes:
        if name != MANIFEST_NAME:
            return data
        body = json.loads(data)
        body["format_version"] = body["formats"]["archive"] = 1
        for part in body["agents"]:
            del part["stopped"]
        return json.dumps(body).encode()

    _rewrite(archive, as_format_1)
    assert verify_archive(archive).verdict == Verdict.OK


def test_an_agent_that_cannot_answer_makes_the_backup_incomplete_not_failed(tmp_path: Path) -> None:
    archive, _ = backup(tmp_path, silent="beta")
    manifest = manifest_of(archive)
    assert manifest.agent("alpha").complete  # type: ignore[union-attr]
    beta = manifest.agent("beta")
    assert beta is not None and not beta.complete and "not connected" in (beta.problem or "")
    report = verify_archive(archive)
    assert report.verdict == Verdict.INCOMPLETE
    assert [p.message for p in report.problems] == [
        "agent beta: its own files are missing: agent beta is not connected"
    ]


def test_one_agent_backup_and_unknown_agent(tmp_path: Path) -> None:
    archive, _ = backup(tmp_path, only_agent="alpha")
    manifest = manifest_of(archive)
    assert manifest.only_agent == "alpha" and [a.name for a in manifest.agents] == ["alpha"]
    assert not any(e.path.startswith(("state/", "agents/beta")) for e in manifest.entries)
    sources, agents = make_fleet(tmp_path / "other")
    with pytest.raises(BackupRefused, match="no agent 'gamma' in fleet"):
        asyncio.run(take_backup(sources, agents, tmp_path / "x.tar", only_agent="gamma"))


def test_restore_into_an_empty_folder_and_refusals(tmp_path: Path) -> None:
    archive, _ = backup(tmp_path)
    target = tmp_path / "restored"
    result = restore_archive(archive, target)
    paths = StatePaths(target / ".flotilla")
    assert result.agents == list(AGENTS) and result.incomplete == []
    assert (target / "fleet.yaml").read_text() == FLEET_YAML
    assert (target / "interfaces" / "alpha.md").is_file()
    assert (paths.workspace("beta") / "SOUL.md").read_text() == "I am beta.\n"
    assert (pending_restore(paths, "alpha") / "memory.db").is_file()
    assert (pending_restore(paths, "alpha") / "history" / "2026-12-01.jsonl").is_file()
    with sqlite3.connect(paths.db) as db:
        assert db.execute("SELECT spent FROM ledger").fetchone()[0] == 1.25
    assert not list(target.rglob("*.tmp"))

    with pytest.raises(RestoreRefused, match="not empty"):
        restore_archive(archive, target)
    (paths.workspace("beta") / "SOUL.md").write_text("changed since\n")
    restore_archive(archive, target, force=True)
    assert (paths.workspace("beta") / "SOUL.md").read_text() == "I am beta.\n"


def test_restore_one_agent_into_its_fleet(tmp_path: Path) -> None:
    archive, sources = backup(tmp_path, only_agent="beta")
    with pytest.raises(RestoreRefused, match="holds agent beta only"):
        restore_archive(archive, tmp_path / "elsewhere")
    folder = sources.fleet_file.parent
    (sources.paths.workspace("beta") / "SOUL.md").write_text("lost\n")
    with pytest.raises(RestoreRefused, match="already has a workspace"):
        restore_archive(archive, folder, only_agent="beta")
    result = restore_archive(archive, folder, only_agent="beta", force=True)
    assert result.agents == ["beta"]
    assert (sources.paths.workspace("beta") / "SOUL.md").read_text() == "I am beta.\n"
    assert (pending_restore(sources.paths, "beta") / "memory.db").is_file()
    assert not pending_restore(sources.paths, "alpha").exists()


def test_a_damaged_archive_is_not_restored(tmp_path: Path) -> None:
    archive, _ = backup(tmp_path)
    _rewrite(archive, lambda name, data: b"x" + data if name == "state/state.db" else data)
    with pytest.raises(RestoreRefused) as refused:
        restore_archive(archive, tmp_path / "restored")
    assert refused.value.exit_code == Verdict.DAMAGED
    assert not (tmp_path / "restored" / ".flotilla" / "state.db").exists()


def test_scheduled_backups_keep_the_newest_and_say_when_the_next_is_due(tmp_path: Path) -> None:
    sources, agents = make_fleet(tmp_path)
    schedule = BackupSchedule(every="6h", keep=2, dir="saved")
    events: list[tuple[str, dict[str, Any]]] = []
    backups = ScheduledBackups(
        lambda: schedule, lambda: sources, agents, lambda kind, **data: events.append((kind, data))
    )
    folder = backup_folder(schedule, sources.fleet_file)
    assert folder == sources.fleet_file.parent / "saved"
    assert seconds_until_due(schedule, folder, "demo", time.time()) == 0

    for _ in range(3):
        assert asyncio.run(backups.take(schedule)) is not None

    kept = scheduled_backups(folder, "demo")
    assert len(kept) == 2 and all(verify_archive(p).verdict == Verdict.OK for p in kept)
    assert [kind for kind, _ in events] == ["backup.taken"] * 3
    assert len(events[2][1]["removed"]) == 1
    assert 6 * 3600 - 60 < seconds_until_due(schedule, folder, "demo", time.time()) <= 6 * 3600


def test_a_scheduled_backup_that_cannot_be_written_is_an_event(tmp_path: Path) -> None:
    sources, agents = make_fleet(tmp_path)
    (tmp_path / "file").write_text("not a folder")
    schedule = BackupSchedule(every="1h", dir=str(tmp_path / "file" / "below"))
    events: list[tuple[str, dict[str, Any]]] = []
    backups = ScheduledBackups(
        lambda: schedule, lambda: sources, agents, lambda kind, **data: events.append((kind, data))
    )
    assert asyncio.run(backups.take(schedule)) is None
    assert events[0][0] == "backup.failed" and "file" in events[0][1]["error"]


def test_the_backup_option_of_fleet_yaml_is_checked() -> None:
    assert BackupSchedule(every="6h").keep == 7
    with pytest.raises(ValueError, match="shorter than one minute"):
        BackupSchedule(every="30s")
    with pytest.raises(ValueError, match="invalid duration"):
        BackupSchedule(every="often")
    with pytest.raises(ValueError):
        BackupSchedule.model_validate({"every": "1d", "keep": 0})


def test_restored_files_replace_what_process_storage_holds(tmp_path: Path) -> None:
    from orchestrator.backends.process import _carry

    storage, restored = tmp_path / "storage", tmp_path / "restored"
    (storage / "history").mkdir(parents=True)
    (storage / "memory.db").write_bytes(b"newer database")
    (storage / "memory.db-wal").write_bytes(b"its log, which must not be replayed into another")
    (storage / "history" / "after-the-backup.jsonl").write_text("{}\n")
    (storage / "workspace" / "notes").mkdir(parents=True)
    (storage / "workspace" / "notes" / "kept.md").write_text("not the agent's own files\n")
    (restored / "history").mkdir(parents=True)
    (restored / "memory.db").write_bytes(b"backed-up database")
    (restored / "history" / "before.jsonl").write_text("{}\n")

    _carry(restored, storage, replace=True)

    assert (storage / "memory.db").read_bytes() == b"backed-up database"
    assert not (storage / "memory.db-wal").exists()
    assert sorted(p.name for p in (storage / "history").iterdir()) == ["before.jsonl"]
    assert (storage / "workspace" / "notes" / "kept.md").exists()

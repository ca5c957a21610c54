"""Agents as local subprocesses: for machines without Docker, and for fast tests.

Isolation is weak: agents run as the orchestrator's user, share its filesystem view and
network, and have no memory, CPU, process or disk limits. `flotilla ps` says so. Each agent's
storage is a folder of its own (`.flotilla/agent-data/<agent>/`) that the orchestrator never
opens; its token is read from `.flotilla/tokens/<agent>`. Nothing but the user's file
permissions keeps such an agent from the rest of the host.

Each unit is a JSON record under `<state>/units/`; a started unit records its pid and the
process start time so that a recycled pid is never mistaken for the agent (adoption after an
orchestrator restart relies on this).
"""

from __future__ import annotations

import builtins
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from orchestrator.backends.base import (
    AGENT_OWNED,
    LABEL_AGENT,
    LABEL_CONFIG_HASH,
    LABEL_FLEET,
    AgentSpec,
    Backend,
    BackendError,
    SnapshotRun,
    StoppedStorage,
    UnitInfo,
    UnitState,
)
from orchestrator.backends.process_sandbox import HostProcessRunner
from orchestrator.state.cleanup import BACKUP_STAGING_PREFIX

REPO_ROOT = Path(__file__).resolve().parents[2]
_PASSTHROUGH_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


class UnitRecord(BaseModel):
    name: str
    labels: dict[str, str]
    data_dir: str
    env: dict[str, str]
    pid: int | None = None
    proc_start: str | None = None
    started_at: datetime | None = None
    exit_code: int | None = None
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


def _read_record(path: Path) -> UnitRecord:
    try:
        return UnitRecord.model_validate_json(path.read_text())
    except (OSError, ValidationError) as exc:
        problem = str(exc).splitlines()[0]
        raise BackendError(
            f"the agent process record {path} cannot be read ({problem}): stop the process it "
            "belongs to (`ps -ef | grep agent_runtime`) and delete the file"
        ) from None


def _proc_start_time(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat: the start time, which tells a recycled pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        return None
    return fields[19]


def _carry(previous: Path, data_dir: Path, replace: bool = False) -> None:
    """The agent's own files from a previous-layout folder or a restored backup, into its
    storage (with `replace`, what they replace goes first, memory.db's WAL included). Agents of
    this runtime run with the orchestrator's user anyway; links are copied as links all the same."""
    if replace and (previous / "memory.db").exists():
        for name in ("memory.db", "memory.db-wal", "memory.db-shm"):
            (data_dir / name).unlink(missing_ok=True)
    for relative in AGENT_OWNED:
        source, target = previous / relative, data_dir / relative
        if source.is_symlink() or not source.exists():
            continue
        if replace and target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif replace:
            target.unlink(missing_ok=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target, follow_symlinks=False)


class ProcessBackend(Backend):
    name = "process"
    isolation = (
        "weak: agents are local processes with the orchestrator's user, filesystem and network; "
        "no resource or disk limits"
    )

    def __init__(self, state_root: Path, python: str | None = None) -> None:
        self._units = state_root / "units"
        self._units.mkdir(parents=True, exist_ok=True)
        self._python = python or sys.executable
        self._children: dict[str, subprocess.Popen[bytes]] = {}

    # --- records ---------------------------------------------------------------------------

    def _record_path(self, unit_id: str) -> Path:
        if "/" in unit_id or unit_id.startswith("."):
            raise BackendError(f"invalid unit id {unit_id!r}")
        return self._units / f"{unit_id}.json"

    def _log_path(self, unit_id: str) -> Path:
        return self._units / f"{unit_id}.log"

    def _load(self, unit_id: str) -> UnitRecord:
        path = self._record_path(unit_id)
        if not path.is_file():
            raise BackendError(f"no agent process {unit_id!r}")
        return _read_record(path)

    def _save(self, record: UnitRecord) -> None:
        path = self._record_path(record.name)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(record.model_dump_json())
        tmp.replace(path)

    # --- Backend ---------------------------------------------------------------------------

    def prepare_fleet(self, fleet: str) -> str:
        return "127.0.0.1"

    def teardown_fleet(self, fleet: str) -> None:
        return None

    def create(self, spec: AgentSpec) -> UnitInfo:
        env = {key: os.environ[key] for key in _PASSTHROUGH_ENV if key in os.environ}
        env |= spec.env | {
            "FLOTILLA_URL": spec.orchestrator_url,
            "FLOTILLA_AGENT": spec.agent,
            "FLOTILLA_DATA": str(spec.data_dir),
            "PYTHONPATH": str(REPO_ROOT),
            "PYTHONUNBUFFERED": "1",
        }
        if spec.token_file is not None:
            env["FLOTILLA_BEARER_FILE"] = str(spec.token_file)
        fresh = not spec.data_dir.exists()
        spec.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if spec.carry_from is not None and (fresh or spec.carry_replaces):
            _carry(spec.carry_from, spec.data_dir, replace=spec.carry_replaces)
        record = UnitRecord(name=spec.unit_name, labels=spec.labels, data_dir=str(spec.data_dir), env=env)
        self._save(record)
        return self._info(record)

    def snapshot_stopped(self, storage: StoppedStorage) -> SnapshotRun:
        return ProcessSnapshotRun(self._python, storage, self._units)

    def sandbox(self) -> HostProcessRunner:
        """Not a sandbox: `confined` is False, and the exec tool refuses it unless allowed."""
        return HostProcessRunner()

    def exec(self, unit_id: str, command: builtins.list[str]) -> tuple[int, str]:
        record = self._load(unit_id)
        try:
            done = subprocess.run(
                command,
                check=False,
                cwd=record.data_dir,
                env=record.env,
                capture_output=True,
                text=True,
                timeout=300,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BackendError(f"cannot run {command[0]!r}: {exc}") from None
        return done.returncode, done.stdout + done.stderr

    def start(self, unit_id: str) -> None:
        record = self._load(unit_id)
        if self._alive(record):
            return
        try:
            with self._log_path(unit_id).open("ab") as log:
                child = subprocess.Popen(
                    [self._python, "-m", "agent_runtime"],
                    env=record.env,
                    cwd=record.data_dir,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        except OSError as exc:
            raise BackendError(f"cannot start the agent process {unit_id}: {exc}") from None
        self._children[unit_id] = child
        record.pid = child.pid
        record.proc_start = _proc_start_time(child.pid)
        record.started_at = datetime.now(UTC)
        record.exit_code = None
        self._save(record)

    def stop(self, unit_id: str, timeout_s: float = 10.0) -> None:
        record = self._load(unit_id)
        if not self._alive(record) or record.pid is None:
            return
        os.kill(record.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while self._alive(record) and time.monotonic() < deadline:
            time.sleep(0.05)
        if self._alive(record):
            os.kill(record.pid, signal.SIGKILL)
            while self._alive(record):
                time.sleep(0.02)
        record.exit_code = self._reap(unit_id)
        self._save(record)

    def remove(self, unit_id: str) -> None:
        self.stop(unit_id, timeout_s=5.0)
        self._record_path(unit_id).unlink(missing_ok=True)
        self._log_path(unit_id).unlink(missing_ok=True)
        self._children.pop(unit_id, None)

    def inspect(self, unit_id: str) -> UnitInfo:
        return self._info(self._load(unit_id))

    def logs(self, unit_id: str, follow: bool = False, tail: int = 200) -> Iterator[str]:
        path = self._log_path(unit_id)
        if not path.exists():
            return
        with path.open("r", errors="replace") as handle:
            yield from handle.readlines()[-tail:] if tail else handle.readlines()
            while follow:
                line = handle.readline()
                if line:
                    yield line
                else:
                    time.sleep(0.2)

    def engine_says(self, unit: UnitInfo) -> str:
        said = super().engine_says(unit)
        if unit.state == "running":
            return said
        last = [line.strip() for line in self.logs(unit.id, tail=1) if line.strip()]
        return f"{said}, its last log line: {last[-1][:200]}" if last else said

    def list(self, labels: dict[str, str]) -> list[UnitInfo]:
        found = []
        for path in sorted(self._units.glob("*.json")):
            record = _read_record(path)
            if all(record.labels.get(k) == v for k, v in labels.items()):
                found.append(self._info(record))
        return found

    def release_storage(self, fleet: str, state_root: Path, delete: bool) -> builtins.list[str]:
        folder = state_root / "agent-data"
        if not delete or not folder.exists():
            return []
        shutil.rmtree(folder, ignore_errors=True)  # rmtree never follows links
        return [f"deleted {folder}"]

    def memory_usage(self, unit_id: str) -> int | None:
        record = self._load(unit_id)
        if not self._alive(record) or record.pid is None:
            return None
        try:
            status = Path(f"/proc/{record.pid}/status").read_text()
        except FileNotFoundError:
            return None
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return None

    # --- helpers ---------------------------------------------------------------------------

    def _alive(self, record: UnitRecord) -> bool:
        if record.pid is None:
            return False
        child = self._children.get(record.name)
        if child is not None and child.poll() is not None:
            return False
        return _proc_start_time(record.pid) == record.proc_start

    def _reap(self, unit_id: str) -> int | None:
        child = self._children.get(unit_id)
        return child.poll() if child is not None else None

    def _info(self, record: UnitRecord) -> UnitInfo:
        state: UnitState
        if self._alive(record):
            state = "running"
        elif record.pid is None:
            state = "created"
        else:
            state = "exited"
        exit_code = record.exit_code if record.exit_code is not None else self._reap(record.name)
        return UnitInfo(
            id=record.name,
            name=record.name,
            agent=record.labels.get(LABEL_AGENT, ""),
            fleet=record.labels.get(LABEL_FLEET, ""),
            config_hash=record.labels.get(LABEL_CONFIG_HASH, ""),
            state=state,
            started_at=record.started_at,
            exit_code=exit_code if state == "exited" else None,
            labels=record.labels,
            node=platform.node() or None,
        )


class ProcessSnapshotRun(SnapshotRun):
    """The agent's snapshot code as a subprocess over its storage folder, a scratch folder of
    the orchestrator's own for the copy (the process runtime has no confinement to give it)."""

    def __init__(self, python: str, storage: StoppedStorage, scratch_root: Path) -> None:
        if not storage.data_dir.is_dir():
            raise BackendError(f"agent {storage.agent} has no storage yet ({storage.data_dir})")
        scratch_root.mkdir(parents=True, exist_ok=True)
        # Named like a backup's staging folder: one left by a kill is removed at the next start.
        self._scratch = Path(
            tempfile.mkdtemp(prefix=f"{BACKUP_STAGING_PREFIX}{storage.agent}-", dir=scratch_root)
        )
        env = {key: os.environ[key] for key in _PASSTHROUGH_ENV if key in os.environ}
        try:
            self._process = subprocess.Popen(
                [python, "-m", "agent_runtime.workspace.snapshot", str(storage.data_dir), str(self._scratch)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env | {"PYTHONPATH": str(REPO_ROOT)},
            )
        except OSError as failed:
            shutil.rmtree(self._scratch, ignore_errors=True)
            raise BackendError(f"cannot start the snapshot of agent {storage.agent}: {failed}") from None

    def blocks(self) -> Iterator[bytes]:
        stdout = self._process.stdout
        assert stdout is not None  # opened with PIPE
        while block := os.read(stdout.fileno(), 1024 * 1024):
            yield block

    def abort(self) -> None:
        self._process.kill()
        self.finish()

    def finish(self) -> str | None:
        try:
            _, err = self._process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self._process.kill()
            _, err = self._process.communicate()
        finally:
            shutil.rmtree(self._scratch, ignore_errors=True)
        if self._process.returncode == 0:
            return None
        said = err.decode(errors="replace").strip().splitlines()
        return f"the snapshot run exited with status {self._process.returncode}" + (
            f": {said[-1]}" if said else ""
        )

"""`flotilla doctor` on a fleet of the process runtime: state.db and the backups' age, printed
with the command that fixes each finding, `--json`, and an exit code per severity."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from orchestrator.doctor.live_checks import LiveStatus, check_live
from orchestrator.state.db import Database
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import run_flotilla

FLEET = """\
version: 1
fleet: checked
agents:
  writer:
    role: writes
"""


def _fleet(folder: Path) -> StatePaths:
    (folder / "fleet.yaml").write_text(FLEET)
    paths = StatePaths.for_fleet_file(folder / "fleet.yaml")
    paths.ensure()
    paths.runtime_file.write_text("process\n")
    db = Database(paths.db)
    db.execute("CREATE TABLE kept (text TEXT)")
    db.close()
    return paths


def _doctor(folder: Path) -> tuple[int, dict[str, dict[str, object]], str]:
    shown = run_flotilla(folder, "doctor")
    assert "Traceback" not in shown.stdout + shown.stderr
    as_json = run_flotilla(folder, "doctor", "--json")
    assert as_json.returncode == shown.returncode
    report = json.loads(as_json.stdout)
    return shown.returncode, {f["check"]: f for f in report["findings"]}, shown.stdout


def test_a_sound_fleet_without_a_recent_backup_is_a_warning_with_its_fix(tmp_path: Path) -> None:
    _fleet(tmp_path)
    old = tmp_path / "flotilla-backup-checked-20261101T0000.tar"
    old.write_bytes(b"an archive")
    two_days_ago = time.time() - 48 * 3600
    os.utime(old, (two_days_ago, two_days_ago))

    code, findings, text = _doctor(tmp_path)

    assert code == 1
    assert findings["state_db"]["severity"] == "ok"
    assert findings["backups"]["severity"] == "warning" and findings["backups"]["fix"] == "flotilla backup"
    assert "48 hours old" in text and "fix: flotilla backup" in text


def test_a_sound_fleet_with_a_fresh_backup_is_ok(tmp_path: Path) -> None:
    _fleet(tmp_path)
    (tmp_path / "flotilla-backup-checked-20261207T0000.tar").write_bytes(b"an archive")

    code, findings, text = _doctor(tmp_path)

    assert code == 0 and set(findings) == {"state_db", "backups", "orchestrator"}
    assert "overall: ok" in text


def test_a_damaged_state_db_is_exit_code_4_with_the_restore_command(tmp_path: Path) -> None:
    paths = _fleet(tmp_path)
    backup = tmp_path / "flotilla-backup-checked-20261207T0000.tar"
    backup.write_bytes(b"an archive")
    paths.db.write_bytes(b"\0" * 8192)

    code, findings, text = _doctor(tmp_path)

    assert code == 4
    assert findings["state_db"]["severity"] == "error"
    assert (
        findings["state_db"]["fix"] == f"flotilla down; flotilla restore {backup} --into {tmp_path} --force"
    )
    assert "is damaged" in text and "ERROR" in text


def test_a_running_orchestrators_view_adds_full_disks_and_damage_it_met() -> None:
    status = {
        "problems": [
            "state.db /srv/fleet/.flotilla/state.db is damaged (database disk image is malformed): ..."
        ],
        "agents": [
            {"name": "writer", "disk_full": True, "disk_free_bytes": 8192},
            {"name": "reader", "disk_full": False, "disk_free_bytes": 9_000_000},
        ],
    }

    findings = check_live(LiveStatus(status=status))

    by_check = {(f.check, f.severity): f for f in findings}
    assert ("orchestrator", "ok") in by_check and ("state_db", "error") in by_check
    full = by_check[("volumes", "warning")]
    assert full.agent == "writer" and "8.0 KiB free" in full.summary and "du -sh /data" in (full.fix or "")
    (away,) = check_live(LiveStatus(error="the orchestrator at http://127.0.0.1:9 does not answer"))
    assert away.severity == "error" and away.fix == "flotilla down && flotilla up -d"

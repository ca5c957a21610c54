"""An agent stopped by the operator when its fleet was backed up stays stopped after a restore:
its unit is made on the fresh machine (its restored files go into its storage) but not
started, so `ps` says "stopped (operator)" and counts it asleep, as it was."""

from __future__ import annotations

from pathlib import Path

from orchestrator.backends.base import UnitInfo
from orchestrator.config.loader import load_fleet
from orchestrator.config.settings import container_hash
from orchestrator.fleet.reconcile import plan

FLEET = """\
version: 1
fleet: restored
defaults:
  always_on: true
agents:
  kept:
    role: stopped by the operator before the backup
  working:
    role: running at the backup
"""


def test_a_held_agent_without_a_unit_is_made_and_not_started(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    fleet = load_fleet(tmp_path / "fleet.yaml")

    actions = {action.agent: action for action in plan(fleet, [], frozenset({"kept"}))}

    assert actions["kept"].kind == "create" and not actions["kept"].start
    assert "stopped" in actions["kept"].reason
    assert actions["working"].kind == "create" and actions["working"].start


def test_a_held_agent_whose_settings_changed_is_made_again_and_not_started(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    fleet = load_fleet(tmp_path / "fleet.yaml")
    stale = UnitInfo(
        id="id-kept",
        name="flotilla-restored-kept",
        agent="kept",
        fleet="restored",
        config_hash="stale",
        state="exited",
    )

    (action,) = [a for a in plan(fleet, [stale], frozenset({"kept"})) if a.agent == "kept"]

    assert action.kind == "recreate" and not action.start
    assert container_hash(fleet, "kept") != "stale"

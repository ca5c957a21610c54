"""Policies request transitions and a refusal reaches them as a failure naming its reason: an
apply reports the agent failed, the engine is left untouched, the other agents go on."""

from __future__ import annotations

from pathlib import Path

from orchestrator.config.loader import load_fleet
from orchestrator.fleet.reconcile import PlanAction, apply
from orchestrator.testing.fake_backend import FakeBackend, fake_spec
from orchestrator.wiring import reconciling_services


def test_a_plan_action_without_the_engines_state_is_a_failed_result_not_a_silent_skip() -> None:
    engine = FakeBackend()
    kept = engine.create(fake_spec("f", "kept"))
    stray = engine.create(fake_spec("f", "stray"))
    engine.calls.clear()
    blind = PlanAction("remove", "kept", "hand-made", kept.id)
    seen = PlanAction("remove", "stray", "no longer in fleet.yaml", stray.id, unit_state="created")
    results = apply([blind, seen], engine, lambda agent: fake_spec("f", agent))
    by_agent = {result.action.agent: result for result in results}
    assert not by_agent["kept"].ok
    assert "reconcile asked to remove kept: refused" in by_agent["kept"].error
    assert "needs the unit's state" in by_agent["kept"].error
    assert by_agent["stray"].ok
    assert engine.calls == [("remove", stray.id)]
    assert [unit.agent for unit in engine.list({})] == ["kept"]


def test_apply_makes_each_unit_through_the_lifecycle_from_that_agents_own_spec() -> None:
    engine = FakeBackend()
    old = engine.create(fake_spec("f", "changed"))
    engine.calls.clear()
    actions = [
        PlanAction("create", "sleeper", "asleep until it has work", start=False),
        PlanAction("create", "awake", "not running"),
        PlanAction("recreate", "changed", "container settings changed", old.id, unit_state="created"),
        PlanAction("create", "mixed", "not running"),
    ]
    specs = {"sleeper": "sleeper", "awake": "awake", "changed": "changed", "mixed": "someone-else"}
    results = apply(actions, engine, lambda agent: fake_spec("f", specs[agent]))
    by_agent = {result.action.agent: result for result in results}
    assert all(by_agent[agent].ok for agent in ("sleeper", "awake", "changed"))
    assert "reconcile asked to run mixed: refused, run needs mixed's spec" in by_agent["mixed"].error
    states = {unit.agent: unit.state for unit in engine.list({})}
    assert states == {"sleeper": "created", "awake": "running", "changed": "running"}
    assert engine.count("remove", old.id) == 1
    assert engine.count("create", "flotilla-f-someone-else") == 0


def test_a_recreated_unit_is_removed_then_run_through_the_lifecycle(tmp_path: Path) -> None:
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text("version: 1\nfleet: demo\nagents:\n  a:\n    role: one\n")
    engine = FakeBackend()
    _, manager = reconciling_services(load_fleet(fleet_file), engine)
    engine.create(manager.spec_for("a"))
    engine.calls.clear()
    made = manager.recreate("a")
    operations = [operation for operation, _ in engine.calls if operation != "list"]
    assert operations == ["remove", "create", "start"]
    assert made.agent == "a" and [unit.state for unit in engine.list({})] == ["running"]

"""Policies request transitions and a refusal reaches them as a failure naming its reason: an
apply reports the agent failed, the engine is left untouched, the other agents go on."""

from __future__ import annotations

from orchestrator.fleet.reconcile import PlanAction, apply
from orchestrator.testing.fake_backend import FakeBackend, fake_spec


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

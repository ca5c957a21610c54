"""Reconcile planning: create missing, recreate changed, remove deleted, keep the rest."""

from __future__ import annotations

from pathlib import Path

from orchestrator.backends.base import LABEL_ENDPOINT, UnitInfo
from orchestrator.config.loader import LoadedFleet, load_fleet
from orchestrator.reconcile import plan


def fleet_of(tmp_path: Path, agents: dict[str, str]) -> LoadedFleet:
    body = "".join(f"  {name}:\n    role: {role}\n" for name, role in agents.items())
    path = tmp_path / "fleet.yaml"
    path.write_text(f"version: 1\nfleet: demo\nagents:\n{body}")
    return load_fleet(path)


def unit(agent: str, config_hash: str, state: str = "running", uid: str | None = None) -> UnitInfo:
    return UnitInfo(
        id=uid or f"id-{agent}",
        name=f"flotilla-demo-{agent}",
        agent=agent,
        fleet="demo",
        config_hash=config_hash,
        state=state,
    )  # type: ignore[arg-type]


def kinds(actions: list) -> dict[str, str]:  # type: ignore[type-arg]
    return {a.agent: a.kind for a in actions}


def test_empty_runtime_creates_everything(tmp_path: Path) -> None:
    fleet = fleet_of(tmp_path, {"a": "x", "b": "y"})
    assert kinds(plan(fleet, [])) == {"a": "create", "b": "create"}


def test_unchanged_units_are_kept(tmp_path: Path) -> None:
    fleet = fleet_of(tmp_path, {"a": "x", "b": "y"})
    units = [unit("a", fleet.agent_hash("a")), unit("b", fleet.agent_hash("b"))]
    assert kinds(plan(fleet, units)) == {"a": "keep", "b": "keep"}


def test_changed_deleted_and_stopped(tmp_path: Path) -> None:
    fleet = fleet_of(tmp_path, {"a": "x", "b": "y", "c": "z"})
    units = [
        unit("a", "stale-hash"),
        unit("b", fleet.agent_hash("b"), state="exited"),
        unit("c", fleet.agent_hash("c")),
        unit("gone", "whatever"),
    ]
    actions = plan(fleet, units)
    assert kinds(actions) == {"a": "recreate", "b": "start", "c": "keep", "gone": "remove"}
    removed = [a for a in actions if a.kind == "remove"]
    assert removed[0].unit_id == "id-gone" and "no longer in fleet.yaml" in removed[0].reason


def test_duplicates_are_removed(tmp_path: Path) -> None:
    fleet = fleet_of(tmp_path, {"a": "x"})
    units = [unit("a", fleet.agent_hash("a"), uid="one"), unit("a", fleet.agent_hash("a"), uid="two")]
    actions = plan(fleet, units)
    assert [(a.kind, a.unit_id) for a in actions] == [("remove", "two"), ("keep", "one")]


def test_hibernated_stopped_unit_is_not_started(tmp_path: Path) -> None:
    fleet = fleet_of(tmp_path, {"a": "x"})
    actions = plan(fleet, [unit("a", fleet.agent_hash("a"), state="exited")], frozenset({"a"}))
    assert [(a.kind, a.reason) for a in actions] == [("keep", "hibernated")]


def test_units_dialing_another_orchestrator_address_are_recreated(tmp_path: Path) -> None:
    fleet = fleet_of(tmp_path, {"a": "x", "b": "y"})
    old = {LABEL_ENDPOINT: "http://172.18.0.1:8420"}
    new = {LABEL_ENDPOINT: "http://172.18.0.1:9000"}
    units = [
        UnitInfo(
            id="1",
            name="n1",
            agent="a",
            fleet="demo",
            config_hash=fleet.agent_hash("a"),
            state="running",
            labels=old,
        ),
        UnitInfo(
            id="2",
            name="n2",
            agent="b",
            fleet="demo",
            config_hash=fleet.agent_hash("b"),
            state="running",
            labels=new,
        ),
    ]
    actions = plan(fleet, units, endpoint="http://172.18.0.1:9000")
    assert [(a.agent, a.kind, a.reason) for a in actions] == [
        ("a", "recreate", "the orchestrator's address changed"),
        ("b", "keep", "unchanged"),
    ]
    assert kinds(plan(fleet, units)) == {"a": "keep", "b": "keep"}

"""Reconcile planning: create missing, recreate changed, remove deleted, keep the rest."""

from __future__ import annotations

from pathlib import Path

from orchestrator.backends.base import LABEL_ENDPOINT, UnitInfo
from orchestrator.config.fleet import LoadedFleet
from orchestrator.config.loader import load_fleet
from orchestrator.config.settings import container_hash, runtime_hash
from orchestrator.fleet.reconcile import plan


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
    units = [unit("a", container_hash(fleet, "a")), unit("b", container_hash(fleet, "b"))]
    assert kinds(plan(fleet, units)) == {"a": "keep", "b": "keep"}


def test_changed_deleted_and_stopped(tmp_path: Path) -> None:
    fleet = fleet_of(tmp_path, {"a": "x", "b": "y", "c": "z"})
    units = [
        unit("a", "stale-hash"),
        unit("b", container_hash(fleet, "b"), state="exited"),
        unit("c", container_hash(fleet, "c")),
        unit("gone", "whatever"),
    ]
    actions = plan(fleet, units)
    assert kinds(actions) == {"a": "recreate", "b": "start", "c": "keep", "gone": "remove"}
    removed = [a for a in actions if a.kind == "remove"]
    assert removed[0].unit_id == "id-gone" and "no longer in fleet.yaml" in removed[0].reason


def test_duplicates_are_removed(tmp_path: Path) -> None:
    fleet = fleet_of(tmp_path, {"a": "x"})
    units = [
        unit("a", container_hash(fleet, "a"), uid="one"),
        unit("a", container_hash(fleet, "a"), uid="two"),
    ]
    actions = plan(fleet, units)
    assert [(a.kind, a.unit_id) for a in actions] == [("remove", "two"), ("keep", "one")]


def test_hibernated_stopped_unit_is_not_started(tmp_path: Path) -> None:
    fleet = fleet_of(tmp_path, {"a": "x"})
    actions = plan(fleet, [unit("a", container_hash(fleet, "a"), state="exited")], frozenset({"a"}))
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
            config_hash=container_hash(fleet, "a"),
            state="running",
            labels=old,
        ),
        UnitInfo(
            id="2",
            name="n2",
            agent="b",
            fleet="demo",
            config_hash=container_hash(fleet, "b"),
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


# Field by field: what a change to fleet.yaml takes, and which agents it reaches.

TWO = """\
version: 1
fleet: demo
llm:
  models:
    test: {context_window: 16384}
agents:
  alpha:
    role: first
    talks_to: [beta]
  beta:
    role: second
"""


def fleet_text(tmp_path: Path, text: str, name: str = "fleet.yaml") -> LoadedFleet:
    path = tmp_path / name
    path.write_text(text)
    return load_fleet(path)


def running(fleet: LoadedFleet) -> list[UnitInfo]:
    return [unit(agent, container_hash(fleet, agent)) for agent in fleet.config.agents]


def planned(before: LoadedFleet, after: LoadedFleet) -> dict[str, tuple[str, list[str]]]:
    actions = plan(after, running(before), previous=before)
    return {a.agent: (a.kind, [c.field for c in a.changes]) for a in actions}


def test_adding_an_agent_never_restarts_the_others(tmp_path: Path) -> None:
    before = fleet_text(tmp_path, TWO)
    after = fleet_text(tmp_path, TWO + "  gamma:\n    role: third\n", "after.yaml")
    assert container_hash(after, "alpha") == container_hash(before, "alpha")
    assert runtime_hash(after, "alpha") == runtime_hash(before, "alpha")
    # Each agent's AGENTS.md lists every other agent: it is rewritten in place.
    assert planned(before, after) == {
        "alpha": ("update", ["AGENTS.md"]),
        "beta": ("update", ["AGENTS.md"]),
        "gamma": ("create", []),
    }


def test_removing_an_agent_never_restarts_the_others(tmp_path: Path) -> None:
    before = fleet_text(tmp_path, TWO + "  gamma:\n    role: third\n")
    after = fleet_text(tmp_path, TWO, "after.yaml")
    actions = plan(after, running(before), previous=before)
    assert {a.agent: a.kind for a in actions} == {"alpha": "update", "beta": "update", "gamma": "remove"}


def test_a_context_window_change_reaches_the_agent_without_a_new_container(tmp_path: Path) -> None:
    before = fleet_text(tmp_path, TWO)
    after = fleet_text(tmp_path, TWO.replace("context_window: 16384", "context_window: 32768"), "after.yaml")
    assert runtime_hash(after, "alpha") != runtime_hash(before, "alpha")
    assert container_hash(after, "alpha") == container_hash(before, "alpha")
    assert planned(before, after)["alpha"] == ("update", ["context_window", "llm.models.test.context_window"])
    action = plan(after, running(before), previous=before)[0]
    assert "context_window" in action.reason and "the agent reloads its config" in action.reason


def test_a_default_heartbeat_model_change_reaches_every_agent(tmp_path: Path) -> None:
    before = fleet_text(tmp_path, TWO)
    after = fleet_text(tmp_path, TWO + "defaults:\n  heartbeat_model: test\n", "after.yaml")
    changed = fleet_text(
        tmp_path,
        TWO.replace("llm:\n", "llm:\n  providers:\n    local: {base_url: 'http://127.0.0.1:9/v1'}\n")
        + "defaults:\n  heartbeat_model: local:small\n",
        "changed.yaml",
    )
    assert runtime_hash(after, "alpha") != runtime_hash(before, "alpha")
    found = planned(after, changed)
    assert found["alpha"][0] == found["beta"][0] == "update"
    assert "heartbeat_model" in found["alpha"][1] and "models" in found["alpha"][1]
    assert runtime_hash(changed, "beta") != runtime_hash(after, "beta")


def test_an_embedding_change_recreates_the_agents(tmp_path: Path) -> None:
    before = fleet_text(tmp_path, TWO)
    after = fleet_text(
        tmp_path, TWO.replace("llm:\n", "llm:\n  embedding: {dimensions: 256}\n"), "after.yaml"
    )
    assert container_hash(after, "alpha") != container_hash(before, "alpha")
    assert planned(before, after) == {
        "alpha": ("recreate", ["llm.embedding.dimensions"]),
        "beta": ("recreate", ["llm.embedding.dimensions"]),
    }


def test_resources_recreate_only_their_agent(tmp_path: Path) -> None:
    before = fleet_text(tmp_path, TWO)
    after = fleet_text(
        tmp_path, TWO.replace("role: second", "role: second\n    resources: {memory: 256m}"), "a.yaml"
    )
    found = planned(before, after)
    assert found["alpha"] == ("keep", [])
    assert found["beta"] == ("recreate", ["resources.memory"])


def test_seed_and_budget_changes_are_named(tmp_path: Path) -> None:
    before = fleet_text(tmp_path, TWO)
    after = fleet_text(
        tmp_path,
        TWO.replace("role: second", "role: second\n    soul: Calm.\n    budget: {daily_usd: 2}"),
        "after.yaml",
    )
    assert planned(before, after)["beta"] == ("update", ["budget.daily_usd", "soul"])


def test_one_failing_agent_does_not_stop_the_others(tmp_path: Path) -> None:
    from orchestrator.fleet.reconcile import apply as apply_plan
    from orchestrator.testing.fake_backend import FakeBackend, fake_spec

    fleet = fleet_of(tmp_path, {"a": "x", "b": "y"})

    def make_spec(agent: str):  # type: ignore[no-untyped-def]
        if agent == "a":
            raise ValueError("a bug while preparing a")
        return fake_spec("demo", agent)

    backend = FakeBackend()
    results = apply_plan(plan(fleet, []), backend, make_spec)
    assert {r.action.agent: (r.ok, r.error) for r in results} == {
        "a": (False, "ValueError: a bug while preparing a (a bug: see the orchestrator's log)"),
        "b": (True, ""),
    }
    assert [u.agent for u in backend.list({})] == ["b"]


def test_the_supervisor_leaves_units_alone_while_an_apply_runs(tmp_path: Path) -> None:
    """An agent just added (or being recreated) has no unit yet: the supervisor must not make one
    behind the apply's back, or two creations race for the container name."""
    from orchestrator.running_agents.supervisor import Supervisor
    from orchestrator.testing.fake_backend import FakeBackend
    from orchestrator.wiring import reconciling_services

    backend = FakeBackend()
    core, manager = reconciling_services(fleet_of(tmp_path, {"a": "x"}), backend)
    supervisor = Supervisor(
        core.db, core.fleet_view, manager, core.backend, core.controls, core.health, core.events
    )
    with manager.unless_applying() as free:  # as an apply holds it
        assert free
        assert supervisor.check_once() == []
        assert backend.list({}) == []
    assert supervisor.check_once() == ["a"]
    assert [unit.agent for unit in backend.list({})] == ["a"]


def test_a_bug_while_planning_is_a_problem_and_an_event_not_an_exception(tmp_path: Path) -> None:
    from orchestrator.testing.fake_backend import FakeBackend
    from orchestrator.wiring import reconciling_services

    class BrokenListing(FakeBackend):
        def list(self, labels: dict[str, str]) -> list[UnitInfo]:
            raise KeyError("Labels")

    core, manager = reconciling_services(fleet_of(tmp_path, {"a": "x"}), BrokenListing())
    assert manager.apply() == []
    assert manager.problems == ["planning failed: KeyError: 'Labels' (a bug: see the log)"]
    (event,) = [e for e in core.events.recent(limit=10) if e.type == "fleet.applied"]
    assert event.data["failed"] == manager.problems

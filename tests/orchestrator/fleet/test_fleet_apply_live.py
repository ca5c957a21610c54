"""`up` and `apply` against a running orchestrator (process backend), through the command line:
the file given is the file applied, only what changed is touched, and a failure is reported."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.backends.base import UnitInfo
from orchestrator.backends.process import ProcessBackend
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import fleet_status, free_port, run_flotilla, wait_for

FLEET = """\
version: 1
fleet: live
defaults:
  always_on: true
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


def units(folder: Path) -> dict[str, UnitInfo]:
    backend = ProcessBackend(StatePaths.for_fleet_file(folder / "fleet.yaml").root / "process")
    return {unit.agent: unit for unit in backend.list({}) if unit.state == "running"}


def events(folder: Path) -> list[dict[str, Any]]:
    result = run_flotilla(folder, "events", "--json", "--limit", "200")
    assert result.returncode == 0, result.stderr
    events: list[dict[str, Any]] = json.loads(result.stdout)
    return events


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("live-fleet")
    (folder / "fleet.yaml").write_text(FLEET)
    try:
        started = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v")


def test_apply_dry_run_names_the_fields_and_exits_4_when_changes_are_pending(live: Path) -> None:
    (live / "next.yaml").write_text(FLEET.replace("role: second", "role: the reviewer"))
    before = units(live)
    plan = run_flotilla(live, "apply", "--dry-run", file="next.yaml")
    assert plan.returncode == 5, plan.stderr
    assert "* update   beta" in plan.stdout and "role (the agent reloads its config)" in plan.stdout
    # alpha's AGENTS.md describes beta's role: rewritten in place, nothing else of alpha's changes.
    assert "* update   alpha                AGENTS.md (rewritten in place)\n" in plan.stdout
    assert units(live) == before
    same = run_flotilla(live, "apply", "--dry-run")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "nothing to change" in same.stdout


def test_apply_f_applies_the_file_given_and_adding_an_agent_restarts_no_other(live: Path) -> None:
    before = units(live)
    (live / "bigger.yaml").write_text(FLEET + "  gamma:\n    role: third\n")
    applied = run_flotilla(live, "apply", file="bigger.yaml")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "+ create   gamma" in applied.stdout
    assert "* update   alpha                AGENTS.md (rewritten in place)" in applied.stdout
    after = units(live)
    assert sorted(after) == ["alpha", "beta", "gamma"]
    for agent in ("alpha", "beta"):
        assert (after[agent].id, after[agent].started_at) == (before[agent].id, before[agent].started_at)
    agents_md = StatePaths.for_fleet_file(live / "fleet.yaml").workspace("alpha") / "AGENTS.md"
    assert "- gamma" in agents_md.read_text()
    wait_for(lambda: fleet_status(live)["gamma"]["health"] == "healthy", "gamma to check in")

    back = run_flotilla(live, "apply")
    assert back.returncode == 0, back.stdout + back.stderr
    assert "- remove   gamma" in back.stdout
    assert {a: (u.id, u.started_at) for a, u in units(live).items()} == {
        a: (before[a].id, before[a].started_at) for a in ("alpha", "beta")
    }


def test_a_context_window_change_reaches_the_running_agent(live: Path) -> None:
    before = units(live)
    (live / "fleet.yaml").write_text(FLEET.replace("context_window: 16384", "context_window: 32768"))
    try:
        applied = run_flotilla(live, "apply")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert "context_window" in applied.stdout

        def window_reached() -> bool:
            sent = run_flotilla(live, "send", "alpha", "what is your window?")
            assert sent.returncode == 0, sent.stderr
            return fleet_status(live)["alpha"]["context_window"] == 32768

        wait_for(window_reached, "alpha to work with the new context window")
        assert units(live)["alpha"].started_at == before["alpha"].started_at
    finally:
        (live / "fleet.yaml").write_text(FLEET)
        run_flotilla(live, "apply")


def test_an_embedding_change_recreates_the_agents(live: Path) -> None:
    before = units(live)
    (live / "fleet.yaml").write_text(FLEET.replace("llm:\n", "llm:\n  embedding: {dimensions: 256}\n"))
    try:
        applied = run_flotilla(live, "apply")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert (
            "~ recreate alpha" in applied.stdout
            and "llm.embedding.dimensions (new container)" in applied.stdout
        )
        after = units(live)
        assert after["alpha"].started_at != before["alpha"].started_at
    finally:
        (live / "fleet.yaml").write_text(FLEET)
        run_flotilla(live, "apply")


def test_another_fleets_file_is_refused(live: Path) -> None:
    (live / "other.yaml").write_text(FLEET.replace("fleet: live", "fleet: other"))
    refused = run_flotilla(live, "apply", file="other.yaml")
    assert refused.returncode == 1
    assert "declares fleet 'other', but this orchestrator runs fleet 'live'" in refused.stderr
    assert "nothing changed" in refused.stderr


def test_up_with_a_running_orchestrator_applies_the_file_or_refuses_another_port(live: Path) -> None:
    moved = run_flotilla(live, "up", "-d", "--runtime", "process", "--port", str(free_port()))
    assert moved.returncode == 1
    assert "already runs on port" in moved.stderr and "flotilla down" in moved.stderr
    (live / "up.yaml").write_text(FLEET.replace("role: first", "role: the lead"))
    again = run_flotilla(live, "up", "-d", file="up.yaml")
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"applying {live / 'up.yaml'}" in again.stdout
    assert "* update   alpha" in again.stdout
    run_flotilla(live, "apply")


def test_a_broken_interface_starts_nothing(tmp_path: Path) -> None:
    broken = FLEET.replace(
        "role: second", "role: second\n    interface: |\n      ---\n      operations: [x\n      ---\n"
    )
    (tmp_path / "fleet.yaml").write_text(broken)
    result = run_flotilla(tmp_path, "up", "-d", "--runtime", "process", "--port", str(free_port()))
    assert result.returncode == 2
    assert "agents.beta.interface: INTERFACE.md front matter is not valid YAML" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not (tmp_path / ".flotilla" / "endpoint.json").exists()
    assert not (tmp_path / ".flotilla" / "process" / "units").exists()


def test_an_agent_that_cannot_be_prepared_is_an_event_and_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    blocked = StatePaths.for_fleet_file(tmp_path / "fleet.yaml").agent_dir("beta")
    blocked.parent.mkdir(parents=True)
    blocked.write_text("in the way\n")
    try:
        result = run_flotilla(tmp_path, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert result.returncode == 1
        assert "some agents could not start" in result.stderr and "beta:" in result.stderr
        assert "Traceback" not in result.stderr
        wait_for(lambda: fleet_status(tmp_path)["alpha"]["health"] == "healthy", "alpha to run all the same")
        applied = [e for e in events(tmp_path) if e["type"] == "fleet.applied"]
        assert applied and any(f.startswith("beta:") for f in applied[-1]["data"]["failed"])
    finally:
        run_flotilla(tmp_path, "down", "-v")


def reloads(folder: Path, agent: str) -> int:
    return run_flotilla(folder, "logs", "--tail", "500", agent).stdout.count("configuration reloaded")


def test_a_new_default_heartbeat_model_reaches_the_running_agents(live: Path) -> None:
    before = units(live)
    seen = {agent: reloads(live, agent) for agent in ("alpha", "beta")}
    with_model = FLEET.replace(
        "llm:\n", "llm:\n  providers:\n    local: {base_url: 'http://127.0.0.1:9/v1'}\n"
    ).replace("defaults:\n", "defaults:\n  heartbeat_model: local:small\n")
    (live / "fleet.yaml").write_text(with_model)
    try:
        applied = run_flotilla(live, "apply")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert "* update   alpha" in applied.stdout and "heartbeat_model" in applied.stdout

        wait_for(
            lambda: all(reloads(live, agent) > count for agent, count in seen.items()),
            "both agents to reload their config",
        )
        after = units(live)
        assert {a: (u.id, u.started_at) for a, u in after.items()} == {
            a: (u.id, u.started_at) for a, u in before.items()
        }, "\n".join(json.dumps(e) for e in events(live)[-12:])
    finally:
        (live / "fleet.yaml").write_text(FLEET)
        run_flotilla(live, "apply")

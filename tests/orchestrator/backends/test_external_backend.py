"""The external runtime: agents run by a cluster dial the orchestrator, which starts nothing. It
plans against the agents it expects, keeps their tokens (the cluster's Secrets hold copies), and
says plainly that stopping, restarting and logs are the cluster's."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.backends.base import BackendError
from orchestrator.backends.external import NEEDS_ADDRESS, ExternalBackend
from orchestrator.cli.main import cli
from orchestrator.config.fleet import LoadedFleet
from orchestrator.config.loader import load_fleet
from orchestrator.fleet.reconcile import fleet_labels, plan
from orchestrator.running_agents.supervisor import Supervisor, SupervisorPolicy
from orchestrator.state.paths import StatePaths
from orchestrator.wiring import reconciling_services

FLEET = """\
version: 1
fleet: harbour
agents:
  pilot:
    role: guides ships
    resources: {memory: 128m}
  clerk:
    role: keeps records
"""


def _fleet(tmp_path: Path, text: str = FLEET) -> LoadedFleet:
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    return load_fleet(path)


def test_applying_records_the_agents_it_expects_and_a_second_plan_keeps_them(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path)
    backend = ExternalBackend(tmp_path / "external", "192.0.2.1")
    _, manager = reconciling_services(fleet, backend, StatePaths.for_fleet_file(fleet.path))
    results = manager.apply()
    assert sorted((r.action.kind, r.action.agent, r.ok) for r in results) == [
        ("create", "clerk", True),
        ("create", "pilot", True),
    ]
    again = ExternalBackend(tmp_path / "external")  # as `ps` or `down` open it, without an address
    units = again.list(fleet_labels("harbour"))
    assert sorted(u.agent for u in units) == ["clerk", "pilot"]
    assert {a.kind for a in plan(fleet, units)} == {"keep"}
    assert again.list(fleet_labels("another")) == []


def test_an_agent_made_again_keeps_the_token_its_secret_holds(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path)
    paths = StatePaths.for_fleet_file(fleet.path)
    backend = ExternalBackend(tmp_path / "external", "192.0.2.1")
    core, manager = reconciling_services(fleet, backend, paths)
    manager.apply()
    token = paths.token_file("pilot").read_text()
    bigger = _fleet(tmp_path, FLEET.replace("memory: 128m", "memory: 256m"))
    recreated = [r.action for r in manager.apply(candidate=bigger) if r.action.agent == "pilot"]
    assert [a.kind for a in recreated] == ["recreate"]
    assert paths.token_file("pilot").read_text() == token
    assert core.tokens.identify(token) is not None


def test_stop_and_logs_name_what_the_cluster_does_and_remove_only_forgets(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path)
    backend = ExternalBackend(tmp_path / "external", "192.0.2.1")
    _, manager = reconciling_services(fleet, backend, StatePaths.for_fleet_file(fleet.path))
    manager.apply()
    pilot = manager.units_by_agent()["pilot"]
    with pytest.raises(BackendError, match=r"kubectl scale statefulset agent-pilot --replicas=0"):
        backend.stop(pilot.id)
    with pytest.raises(BackendError, match=r"kubectl logs statefulset/agent-pilot"):
        list(backend.logs(pilot.id))
    backend.start(pilot.id)  # nothing to start: the cluster runs it
    backend.remove(pilot.id)
    assert sorted(manager.units_by_agent()) == ["clerk"]
    with pytest.raises(BackendError, match="no agent"):
        backend.start(pilot.id)


def test_an_agent_that_never_checks_in_is_reported_with_what_to_do(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path)
    backend = ExternalBackend(tmp_path / "external", "192.0.2.1")
    core, manager = reconciling_services(fleet, backend, StatePaths.for_fleet_file(fleet.path))
    manager.apply()
    policy = SupervisorPolicy(start_grace_s=0.0)
    supervisor = Supervisor(
        core.db, core.fleet_view, manager, core.backend, core.controls, core.health, core.events, policy
    )
    assert supervisor.check_once() == []
    unhealthy = [e for e in core.events.recent(limit=20) if e.type == "agent.unhealthy"]
    assert {e.agent for e in unhealthy} == {"pilot", "clerk"}
    assert all(e.data["reason"] == "it stopped checking in" for e in unhealthy)
    assert all("kubectl rollout restart statefulset" in e.data["error"] for e in unhealthy)


def test_the_listen_address_is_required_and_a_broken_record_is_named(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="--agent-listen"):
        ExternalBackend(tmp_path / "external").prepare_fleet("harbour")
    assert ExternalBackend(tmp_path / "external", "192.0.2.1").prepare_fleet("harbour") == "192.0.2.1"
    (tmp_path / "external").mkdir()
    (tmp_path / "external" / "expected.json").write_text("{not json")
    with pytest.raises(BackendError, match=r"expected\.json"):
        ExternalBackend(tmp_path / "external").list({})


def test_up_asks_for_the_agent_address_with_the_external_runtime_only(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    runner = CliRunner()
    missing = runner.invoke(cli, ["up", "--runtime", "external", "-f", str(tmp_path / "fleet.yaml")])
    assert missing.exit_code == 1 and str(missing.exception) == NEEDS_ADDRESS
    stray = runner.invoke(
        cli, ["up", "--runtime", "process", "--agent-listen", "192.0.2.1", "-f", str(tmp_path / "fleet.yaml")]
    )
    assert stray.exit_code == 1 and "--agent-listen is for --runtime external only" in str(stray.exception)


def test_logs_says_where_the_log_is_without_a_traceback(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path)
    paths = StatePaths.for_fleet_file(fleet.path)
    _, manager = reconciling_services(fleet, ExternalBackend(paths.root / "external", "192.0.2.1"), paths)
    manager.apply()
    result = CliRunner().invoke(cli, ["logs", "pilot", "--runtime", "external", "-f", str(fleet.path)])
    assert result.exit_code == 1
    assert (
        str(result.exception)
        == "the cluster keeps the log of agent 'pilot': kubectl logs statefulset/agent-pilot"
    )


def test_down_says_the_pods_are_the_clusters(tmp_path: Path) -> None:
    fleet = _fleet(tmp_path)
    paths = StatePaths.for_fleet_file(fleet.path)
    _, manager = reconciling_services(fleet, ExternalBackend(paths.root / "external", "192.0.2.1"), paths)
    manager.apply()
    result = CliRunner().invoke(cli, ["down", "--runtime", "external", "-f", str(fleet.path)])
    assert result.exit_code == 0, result.output
    assert "`kubectl delete -k DIR`" in result.output
    assert ExternalBackend(paths.root / "external").list({}) == []


def test_up_detached_returns_once_it_listens_without_waiting_for_the_pods(tmp_path: Path) -> None:
    from orchestrator.testing.cli import fleet_status, free_port, run_flotilla

    (tmp_path / "fleet.yaml").write_text(FLEET)
    try:
        started = run_flotilla(
            tmp_path,
            "up",
            "-d",
            "--runtime",
            "external",
            "--agent-listen",
            "127.0.0.1",
            "--port",
            str(free_port()),
        )
        assert started.returncode == 0, started.stdout + started.stderr
        assert "agents check in when the cluster runs their pods" in started.stdout
        status = fleet_status(tmp_path)
        assert sorted(status) == ["clerk", "pilot"]
        assert all(agent["health"] != "healthy" for agent in status.values())
        paths = StatePaths.for_fleet_file(tmp_path / "fleet.yaml")
        assert paths.token_file("pilot").is_file()
    finally:
        down = run_flotilla(tmp_path, "down")
    assert down.returncode == 0, down.stderr

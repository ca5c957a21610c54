"""Wrong names and exit codes: one wording for a name that is no agent of the fleet, whichever
command gets it (exit code 2, the nearest name offered), `did you mean` for an unknown field of
fleet.yaml, and the exit codes docs/cli.md gives."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.config.fleet import ConfigError
from orchestrator.config.loader import load_fleet
from orchestrator.config.wrong_names import unknown_agent
from orchestrator.testing.cli import free_port, run_flotilla, start_flotilla

FLEET = """\
version: 1
fleet: names
agents:
  alpha:
    role: first
    always_on: true
  beta:
    role: second
"""


def test_an_unknown_agent_is_worded_once_with_the_nearest_name() -> None:
    assert unknown_agent("alpah", "names", ["beta", "alpha"]) == (
        "no agent 'alpah' in fleet names (did you mean 'alpha'?); its agents: alpha, beta"
    )
    assert (
        unknown_agent("zzz", "names", ["beta", "alpha"])
        == "no agent 'zzz' in fleet names; its agents: alpha, beta"
    )
    many = unknown_agent("x", "big", [f"a{n:02d}" for n in range(12)])
    assert many.endswith("a09, ... (12 in all; `flotilla ps -q` lists them)")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (FLEET + "agnets: {}\n", "unknown field 'agnets' (did you mean 'agents'?)"),
        (FLEET.replace("role: second", "rol: second"), "unknown field 'rol' (did you mean 'role'?)"),
        (
            FLEET + "    tools:\n      http:\n        alow: [{url: 'https://example.org/'}]\n",
            "unknown field 'alow' (did you mean 'allow'?)",
        ),
        (FLEET + "defaults:\n  budgte: {daily_usd: 1}\n", "unknown field 'budgte' (did you mean 'budget'?)"),
        (FLEET + "zebra: 1\n", "unknown field 'zebra'"),
    ],
    ids=["top", "agent", "http-policy", "defaults", "nothing-close"],
)
def test_an_unknown_field_offers_the_nearest_known_one(tmp_path: Path, text: str, said: str) -> None:
    (tmp_path / "fleet.yaml").write_text(text)
    with pytest.raises(ConfigError) as refused:
        load_fleet(tmp_path / "fleet.yaml")
    messages = [problem.message for problem in refused.value.problems]
    assert said in messages, messages


def test_a_wrong_agent_name_on_logs_is_invalid_input(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    result = run_flotilla(tmp_path, "logs", "alpah", "--runtime", "process")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "error: no agent 'alpah' in fleet names (did you mean 'alpha'?); its agents: alpha, beta"
    )


def test_export_kubernetes_with_a_host_name_for_an_address_is_invalid_input(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    result = run_flotilla(
        tmp_path,
        "export",
        "kubernetes",
        "-o",
        str(tmp_path / "k8s"),
        "--orchestrator-url",
        "http://orch.example:8421",
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("names")
    (folder / "fleet.yaml").write_text(FLEET)
    try:
        started = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v")


@pytest.mark.parametrize(
    "args",
    [
        ("send", "alpah", "hi"),
        ("stop", "alpah"),
        ("pause", "alpah"),
        ("inbox", "alpah"),
        ("exec", "alpah", "true"),
    ],
    ids=lambda args: args[0],
)
def test_a_wrong_agent_name_reads_the_same_on_every_command(running: Path, args: tuple[str, ...]) -> None:
    result = run_flotilla(running, *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip() == (
        "error: no agent 'alpah' in fleet names (did you mean 'alpha'?); its agents: alpha, beta"
    )


@pytest.mark.parametrize("args", [("events", "-F"), ("logs", "-F", "alpha")], ids=["events", "logs"])
def test_ctrl_c_ends_a_follow_with_130(running: Path, args: tuple[str, ...]) -> None:
    follow = start_flotilla(running, *args)
    try:
        time.sleep(3)  # under way: following
        assert follow.poll() is None, follow.communicate()
        follow.send_signal(signal.SIGINT)
        _, stderr = follow.communicate(timeout=30)
    finally:
        if follow.poll() is None:
            follow.kill()
    assert follow.returncode == 130, stderr
    assert "Traceback" not in stderr

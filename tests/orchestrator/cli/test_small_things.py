"""Small things a new operator trips on, each as they hit it: a missing fleet file, a taken port,
init's advice and its starter fleet, plurals, and money without float noise."""

from __future__ import annotations

import socket
from pathlib import Path

from click.testing import CliRunner

from orchestrator.cli.main import cli
from orchestrator.gateway.models import CostsReport, SpendFigures
from orchestrator.testing.cli import run_flotilla

FLEET = "version: 1\nfleet: small\ndefaults:\n  always_on: true\nagents:\n  solo:\n    role: alone\n"


def test_ps_in_a_folder_without_fleet_yaml_says_the_file_is_missing(tmp_path: Path) -> None:
    result = run_flotilla(tmp_path, "ps")
    assert result.returncode == 2
    assert "fleet.yaml does not exist" in result.stderr and "flotilla init" in result.stderr
    assert "no orchestrator is running" not in result.stderr


def test_up_on_a_taken_port_fails_before_saying_it_started(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = run_flotilla(tmp_path, "up", "-d", "--runtime", "process", "--port", str(port))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "orchestrator started" not in result.stdout
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr and "--port" in result.stderr


def test_init_here_gives_advice_without_cd_and_its_fleet_validates_without_warnings(tmp_path: Path) -> None:
    made = run_flotilla(tmp_path, "init", file=None, timeout=60)
    assert made.returncode == 0, made.stdout + made.stderr
    assert "next: flotilla validate && flotilla up" in made.stdout and "cd ." not in made.stdout
    checked = run_flotilla(tmp_path, "validate")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "warning" not in checked.stdout + checked.stderr
    assert "is valid (1 agent)" in checked.stdout
    elsewhere = CliRunner().invoke(cli, ["init", str(tmp_path / "new")])
    assert f"next: cd {tmp_path / 'new'} && flotilla validate" in elsewhere.output


def test_money_is_reported_without_float_noise() -> None:
    figures = SpendFigures(today_usd=0.001489 * 3, month_usd=0.1 + 0.2)
    assert 0.001489 * 3 == 0.0044670000000000005  # what adding prices gives
    assert (figures.today_usd, figures.month_usd) == (0.004467, 0.3)
    report = CostsReport.model_validate({"at": "2030-01-01T00:00:00Z", "agents": [], "fleet": figures})
    assert '"today_usd":0.004467' in report.model_dump_json()


def test_heartbeat_rules_may_be_a_block_of_dash_lines_as_heartbeat_md_writes_them(tmp_path: Path) -> None:
    from orchestrator.config.fleet import ConfigError
    from orchestrator.config.loader import load_fleet

    block = (
        "version: 1\nfleet: beats\ndefaults:\n  always_on: true\nagents:\n  keeper:\n    heartbeat:\n      every: 15m\n      rules: |\n"
        "        - daily 09:00: tidy MEMORY.md\n\n        - every 2h: check the inbox\n"
    )
    (tmp_path / "fleet.yaml").write_text(block)
    rules = load_fleet(tmp_path / "fleet.yaml").config.agents["keeper"].heartbeat
    assert rules is not None and rules.rules == ["daily 09:00: tidy MEMORY.md", "every 2h: check the inbox"]
    (tmp_path / "fleet.yaml").write_text(block.replace("- every 2h", "every 2h"))
    try:
        load_fleet(tmp_path / "fleet.yaml")
    except ConfigError as refused:
        assert "write each rule as `- RULE`" in str(refused.problems)
    else:
        raise AssertionError("a line without '- ' was accepted")
    (tmp_path / "fleet.yaml").write_text(block.replace("daily 09:00", "daily 25:00"))
    try:
        load_fleet(tmp_path / "fleet.yaml")
    except ConfigError as refused:
        assert "daily 25:00" in str(refused.problems)
    else:
        raise AssertionError("a bad rule in a block was accepted")

"""The exec tool's policy (fleet.yaml `tools.exec`), its arguments, and its launcher run as a host
process (the unsandboxed path, which needs no Docker)."""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path

import pytest

from orchestrator.backends.process_sandbox import HostProcessRunner
from orchestrator.backends.sandbox import LauncherReport, SandboxJob, SandboxLimits, parse_report
from orchestrator.config.fleet import ConfigError
from orchestrator.config.loader import load_fleet
from orchestrator.config.settings import container_hash, runtime_hash
from orchestrator.host_tools.sandbox.arguments import input_schema, parse_arguments
from orchestrator.host_tools.sandbox.slots import SandboxSlots
from orchestrator.running_agents.session import tool_settings

HEAD = "version: 1\nfleet: checks\nagents:\n  researcher:\n    role: runs code\n"


def load(tmp_path: Path, tools: str) -> object:
    path = tmp_path / "fleet.yaml"
    path.write_text(HEAD + tools)
    return load_fleet(path)


def problems(tmp_path: Path, tools: str) -> str:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, tools)
    return str(raised.value)


def test_the_checks_fleet_declares_exec_and_the_agent_is_offered_it(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(HEAD + "    tools:\n      exec: {timeout_s: 10}\n")
    fleet = load_fleet(path)
    policy = fleet.config.agents["researcher"].tools.exec
    assert policy is not None and policy.timeout_s == 10 and policy.memory_bytes == 256 * 1024 * 1024
    assert tool_settings(fleet, "researcher").host_tools == ["exec"]


def test_without_exec_the_agent_has_no_such_tool(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(HEAD)
    assert tool_settings(load_fleet(path), "researcher").host_tools == []


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        ("exec: {timeout_s: 0}", "agents.researcher.tools.exec.timeout_s"),
        ("exec: {timeout_s: 601}", "agents.researcher.tools.exec.timeout_s"),
        ("exec: {memory: 8m}", "memory '8m' is below the floor of 16m"),
        ("exec: {pids: 2}", "agents.researcher.tools.exec.pids"),
        ("exec: {network: true}", "agents.researcher.tools.exec.network"),
        ("exec: {output_bytes: 99999999}", "agents.researcher.tools.exec.output_bytes"),
    ],
)
def test_a_bad_policy_is_named_with_its_path(tmp_path: Path, tools: str, expected: str) -> None:
    assert expected in problems(tmp_path, f"    tools:\n      {tools}\n")


def test_enabling_exec_recreates_the_agent_but_its_caps_are_live(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "fleet.yaml").write_text(HEAD)
    short = tmp_path / "short"
    short.mkdir()
    (short / "fleet.yaml").write_text(HEAD + "    tools:\n      exec: {timeout_s: 10}\n")
    longer = tmp_path / "longer"
    longer.mkdir()
    (longer / "fleet.yaml").write_text(HEAD + "    tools:\n      exec: {timeout_s: 60, memory: 1g}\n")
    hashes = [load_fleet(folder / "fleet.yaml") for folder in (plain, short, longer)]
    assert container_hash(hashes[0], "researcher") != container_hash(hashes[1], "researcher")
    assert container_hash(hashes[1], "researcher") == container_hash(hashes[2], "researcher")
    assert runtime_hash(hashes[1], "researcher") == runtime_hash(hashes[2], "researcher")


def test_arguments_are_checked_and_named() -> None:
    assert parse_arguments({}) == (
        "invalid arguments for exec: arguments: give either command (a shell command line) "
        "or python (Python source)"
    )
    bad = parse_arguments({"command": "ls", "files": ["../../etc/passwd"]})
    assert isinstance(bad, str) and "files: '../../etc/passwd' is not a workspace file" in bad
    assert parse_arguments({"command": "ls", "shell": "bash"}) == (
        "invalid arguments for exec: shell: Extra inputs are not permitted"
    )
    good = parse_arguments({"python": "print(1)", "files": ["memory", "SOUL.md"], "outputs": ["memory"]})
    assert not isinstance(good, str)
    assert good.argv == ["python3", "-c", "print(1)"]
    assert good.files == ["MEMORY.md", "SOUL.md"] and good.outputs == ["MEMORY.md"]
    long = parse_arguments({"command": "echo " + "x" * 500})
    assert not isinstance(long, str) and len(long.shown) == 200 and long.shown.endswith("…")


def test_the_schema_offered_to_the_model_has_no_nulls() -> None:
    schema = input_schema()
    assert set(schema["properties"]) == {"command", "python", "files", "outputs", "timeout_s"}
    assert schema["properties"]["command"]["type"] == "string"
    assert schema["additionalProperties"] is False
    assert "null" not in str(schema)


def test_a_report_that_is_not_one_is_named() -> None:
    assert parse_report(b"") == "the sandbox ended without a report"
    assert str(parse_report(b'{"started": "maybe"}')).startswith("the sandbox's report is not valid")
    assert isinstance(parse_report(b'noise\n{"started": false, "problem": "x"}\n'), LauncherReport)


LIMITS = SandboxLimits(
    timeout_s=2, memory_bytes=512 * 1024 * 1024, cpus=1, pids=64, output_bytes=100, work_bytes=0
)


def host_job(command: str, inputs: Path | None = None, outputs: list[str] | None = None) -> SandboxJob:
    return SandboxJob("f", "a", "-", ["/bin/sh", "-c", command], LIMITS, inputs, outputs or [])


def test_the_launcher_caps_output_and_reads_back_named_files(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "SOUL.md").write_text("calm\n")
    job = host_job(
        'cat "$WORKSPACE/SOUL.md"; head -c 5000 /dev/zero | tr "\\0" y; echo oops >&2; echo ok > MEMORY.md',
        inputs,
        ["MEMORY.md", "USER.md"],
    )
    report = HostProcessRunner().run(job).report
    assert report is not None and report.exit_code == 0
    assert report.stdout_bytes == 5005 and base64.b64decode(report.stdout) == b"calm\n" + b"y" * 95
    assert base64.b64decode(report.stderr) == b"oops\n"
    assert base64.b64decode(report.outputs["MEMORY.md"]) == b"ok\n" and report.missing == ["USER.md"]


def test_the_launcher_ends_what_the_command_left_running(tmp_path: Path) -> None:
    marker = tmp_path / "late"
    started = time.monotonic()
    outcome = HostProcessRunner().run(host_job(f"(sleep 1; touch {marker}) & echo gone"))
    assert outcome.report is not None and outcome.report.exit_code == 0
    assert time.monotonic() - started < 1
    time.sleep(1.5)
    assert not marker.exists(), "a background process outlived its command"


def test_the_launcher_cuts_at_the_time_cap() -> None:
    outcome = HostProcessRunner().run(host_job("echo begun; sleep 600"))
    report = outcome.report
    assert report is not None and report.timed_out and report.signal == 9
    assert base64.b64decode(report.stdout) == b"begun\n"
    assert outcome.duration_s < 5


def test_validate_warns_that_the_process_runtime_cannot_sandbox(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(
        "version: 1\nfleet: checks\nruntime: process\nagents:\n"
        "  fenced:\n    role: r\n    tools:\n      exec: {}\n"
        "  trusted:\n    role: r\n    tools:\n      exec: {allow_unsandboxed: true}\n"
    )
    (warning,) = load_fleet(path).warnings
    assert warning.path == "agents.fenced.tools.exec" and warning.line == 8
    assert "the process runtime cannot sandbox code: every exec call will be refused" in warning.message


def test_an_agents_calls_run_one_at_a_time_and_a_few_in_all() -> None:
    slots = SandboxSlots(per_agent=1, at_once=2)
    running: list[str] = []
    most: dict[str, int] = {"a": 0, "all": 0}

    async def call(agent: str) -> None:
        async with slots.slot(agent):
            running.append(agent)
            most["a"] = max(most["a"], running.count("a"))
            most["all"] = max(most["all"], len(running))
            await slots.run(lambda: time.sleep(0.1))
            running.remove(agent)

    async def main() -> None:
        await asyncio.gather(call("a"), call("a"), call("a"), call("b"), call("c"), call("d"))

    started = time.monotonic()
    asyncio.run(main())
    assert most == {"a": 1, "all": 2}
    assert time.monotonic() - started >= 0.3

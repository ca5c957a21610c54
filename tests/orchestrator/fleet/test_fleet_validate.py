"""`flotilla validate` refuses, in one pass and with file:line: field, all that `up` would refuse."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import cli
from orchestrator.config.capacity import Capacity
from orchestrator.config.fleet import ConfigError
from orchestrator.config.loader import load_fleet

BASE = """\
version: 1
fleet: demo
agents:
  alpha:
    role: first
"""


def write(folder: Path, text: str) -> Path:
    path = folder / "fleet.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def validate(path: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["validate", "--runtime", "process", "-f", str(path), *extra])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def problems_of(path: Path, capacity: Capacity | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_fleet(path, capacity)
    return [str(p) for p in info.value.problems]


def test_every_problem_comes_in_one_pass(tmp_path: Path) -> None:
    soul = "x" * 5000
    path = write(
        tmp_path,
        f"""\
        version: 1
        fleet: demo
        agents:
          alpha:
            soul: {soul}
            heartbeat:
              every: 15m
              cron: "0 9 * * *"
              rules:
                - "daily 9am: write the note"
            talks_to: [beta]
            instructions: "Ask `beta.summarize` for summaries."
          beta:
            heartbeat: {{cron: "61 * * * *"}}
            interface: ../../../etc/passwd
            colour: blue
        """,
    )
    code, output = validate(path)
    assert code == 2
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: {path}:5: agents.alpha.soul: seeds SOUL.md: SOUL.md would be 5001 bytes, "
        "over its cap of 4096 bytes (4 KiB) by 905 bytes",
        f"error: {path}:6: agents.alpha.heartbeat: give either 'every' or 'cron', not both",
        f"error: {path}:10: agents.alpha.heartbeat.rules.0: rule 'daily 9am: write the note': "
        "invalid time '9am': write HH:MM on a 24-hour clock, e.g. 09:00",
        f"error: {path}:12: agents.alpha.instructions: `beta.summarize` in fleet.yaml instructions: "
        "beta has no operation 'summarize' (operations: none)",
        f"error: {path}:14: agents.beta.heartbeat.cron: invalid cron expression '61 * * * *': "
        "minute 61 is out of range 0-59",
        f"error: {path}:15: agents.beta.interface: path '../../../etc/passwd' escapes the fleet folder "
        f"{tmp_path}: refused",
        f"error: {path}:16: agents.beta.colour: unknown field 'colour'",
    ]


def test_broken_interface_front_matter_is_refused_by_validate(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        BASE + "    interface: |\n      ---\n      operations: [broken\n      ---\n      Free text.\n",
    )
    code, output = validate(path)
    assert code == 2
    assert f"{path}:6: agents.alpha.interface: INTERFACE.md front matter is not valid YAML" in output


def test_interface_schemas_are_checked(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        BASE
        + textwrap.indent(
            textwrap.dedent(
                """\
                interface: |
                  ---
                  operations:
                    - name: summarize
                      input: {type: objekt}
                  ---
                """
            ),
            "    ",
        ),
    )
    code, output = validate(path)
    assert code == 2
    assert "agents.alpha.interface: INTERFACE.md operation 'summarize'" in output


def test_a_role_too_long_for_its_soul_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, BASE.replace("role: first", "role: " + "r" * 5000))
    assert problems_of(path) == [
        f"{path}:5: agents.alpha.role: seeds SOUL.md: SOUL.md would be 5026 bytes, "
        "over its cap of 4096 bytes (4 KiB) by 930 bytes"
    ]


def test_instructions_and_user_caps(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + f"    instructions: {'i' * 13000}\n    user: {'u' * 5000}\n")
    found = "\n".join(problems_of(path))
    assert "agents.alpha.instructions: seeds INSTRUCTIONS.md: INSTRUCTIONS.md would be 13000 bytes" in found
    assert "agents.alpha.user: seeds USER.md: USER.md would be 5000 bytes" in found


def test_contract_references_found_by_contracts_check_are_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        version: 1
        fleet: demo
        agents:
          alpha:
            instructions: "Ask `beta.translate` to translate."
          beta:
            interface: |
              ---
              operations:
                - name: summarize
              ---
        """,
    )
    found = problems_of(path)
    assert found == [
        f"{path}:5: agents.alpha.instructions: `beta.translate` in fleet.yaml instructions refers to beta, "
        "which is not in talks_to"
    ]


@pytest.mark.parametrize(
    ("cron", "message"),
    [
        ("61 * * * *", "minute 61 is out of range 0-59"),
        ("0 24 * * *", "hour 24 is out of range 0-23"),
        ("0 9 32 * *", "day of month 32 is out of range 1-31"),
        ("0 9 * 13 *", "month 13 is out of range 1-12"),
        ("0 9 * * funday", "day of week 'funday' is not a number"),
        ("0 9 * *", "expected 5 fields (minute hour day-of-month month day-of-week), got 4"),
    ],
)
def test_cron_problems_name_the_field(tmp_path: Path, cron: str, message: str) -> None:
    path = write(tmp_path, BASE + f'    heartbeat: {{cron: "{cron}"}}\n')
    assert problems_of(path) == [
        f"{path}:6: agents.alpha.heartbeat.cron: invalid cron expression {cron!r}: {message}"
    ]


def test_cron_rules_name_the_field_too(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + "    heartbeat:\n      rules:\n        - 'cron \"0 9 * * 9\": plan'\n")
    assert problems_of(path) == [
        f"{path}:8: agents.alpha.heartbeat.rules.0: rule 'cron \"0 9 * * 9\": plan': "
        "invalid cron expression '0 9 * * 9': day of week 9 is out of range 0-7"
    ]


def test_default_rules_are_checked_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "version: 1\nfleet: demo\ndefaults:\n  heartbeat:\n    rules: ['sometimes: look around']\n"
        "agents:\n  alpha: {}\n  beta: {}\n",
    )
    found = problems_of(path)
    assert len(found) == 1
    assert found[0].startswith(f"{path}:5: defaults.heartbeat.rules.0: rule 'sometimes: look around'")


def test_resources_beyond_the_engine_are_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "version: 1\nfleet: demo\ndefaults:\n  resources: {memory: 3g}\n"
        "agents:\n  alpha:\n    resources: {memory: 64m, cpus: 4}\n  beta: {}\n",
    )
    engine = Capacity(cpus=2.0, memory_bytes=2 * 1024**3, source="the Docker engine")
    assert problems_of(path, engine) == [
        f"{path}:4: defaults.resources.memory: memory '3g' is more than the Docker engine has (2.0 GiB)",
        f"{path}:7: agents.alpha.resources.cpus: cpus 4 is more than the Docker engine has (2)",
    ]
    load_fleet(path)  # without an engine to ask, nothing is refused


def test_validate_warns_without_refusing(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        BASE
        + "    interface: |\n      ---\n      operations:\n        - name: summarize\n      ---\n"
        + "  beta:\n    role: second\n",
    )
    code, output = validate(path)
    assert code == 0, output
    assert "warning:" in output and "no agent talks_to alpha" in output
    assert "is valid (2 agents)" in output

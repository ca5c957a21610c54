"""Hostile or broken fleet files, as `flotilla validate` (and so `up`) meets them: each is
refused with exit code 2 and a line saying what is wrong and where, never a traceback."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import cli
from orchestrator.config.fleet import ConfigError
from orchestrator.config.loader import load_fleet
from orchestrator.config.safe_yaml import MAX_DEPTH, MAX_NODES

BASE = """\
version: 1
fleet: demo
agents:
  alpha:
    role: first
"""


def validate(path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["validate", "--runtime", "process", "-f", str(path)])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def write(folder: Path, text: str, name: str = "fleet.yaml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def test_duplicate_agents_are_refused_naming_both_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        version: 1
        fleet: demo
        agents:
          alpha:
            role: first
          alpha:
            role: the one that used to win silently
        """,
    )
    code, output = validate(path)
    assert code == 2
    assert f"{path}:6: duplicate key 'alpha' (first at line 4)" in output


def test_duplicate_keys_anywhere_are_all_reported(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + "    role: second\n    model: test\n    model: test\n")
    code, output = validate(path)
    assert code == 2
    assert f"{path}:6: duplicate key 'role' (first at line 5)" in output
    assert f"{path}:8: duplicate key 'model' (first at line 7)" in output


def test_merge_keys_still_work(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        version: 1
        fleet: demo
        agents:
          alpha: &common {role: worker, model: test}
          beta: {<<: *common, role: second}
        """,
    )
    fleet = load_fleet(path)
    assert fleet.config.agents["beta"].role == "second"
    assert fleet.config.agents["beta"].model == "test"


def bomb(levels: int = 12) -> str:
    lines = ['    role: &a0 "lol"']
    body = ["version: 1", "fleet: demo", "agents:", "  alpha:", *lines, "    models: &a1 [*a0, *a0]"]
    for level in range(2, levels):
        refs = ", ".join([f"*a{level - 1}"] * 9)
        body.append(f"    x{level}: &a{level} [{refs}]")
    return "\n".join(body) + "\n"


def test_an_alias_expansion_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    # 9**11 values once expanded: tens of gigabytes if anything walked it.
    path = write(tmp_path, bomb())
    code, output = validate(path)
    assert code == 2
    assert f"aliases expand to more than {MAX_NODES} values; refused" in output


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + "    models: &loop [*loop]\n")
    code, output = validate(path)
    assert code == 2
    assert f"{path}:6: an alias refers to a value that contains it" in output


def test_a_non_utf8_fleet_file_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_bytes(BASE.encode() + b"    soul: caf\xe9\n")
    code, output = validate(path)
    assert code == 2
    assert f"{path}:6: not UTF-8 text: byte 0xe9 at column 14" in output


def test_a_non_utf8_interface_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "alpha.md").write_bytes(b"---\noperations: []\n---\n\xff\xfe\n")
    path = write(tmp_path, BASE + "    interface: alpha.md\n")
    code, output = validate(path)
    assert code == 2
    assert "agents.alpha.interface: file 'alpha.md' (line 4): not UTF-8 text: byte 0xff" in output


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    deep = "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)
    path = write(tmp_path, BASE + f"    models: {deep}\n")
    code, output = validate(path)
    assert code == 2
    assert f"nested deeper than {MAX_DEPTH} levels" in output


def test_very_deep_nesting_is_refused_without_a_recursion_error(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + "    models: " + "[" * 50_000 + "]" * 50_000 + "\n")
    code, output = validate(path)
    assert code == 2
    assert f"{path}:6:" in output
    assert "nested deeper than" in output or "exceeded maximum nesting depth" in output


@pytest.mark.parametrize("value", ["../../../etc/passwd", "/etc/passwd", "~/secrets.md", "../outside.md"])
def test_interface_paths_out_of_the_fleet_folder_are_refused(tmp_path: Path, value: str) -> None:
    folder = tmp_path / "fleet"
    folder.mkdir()
    (tmp_path / "outside.md").write_text("---\noperations: []\n---\n")
    path = write(folder, BASE + f"    interface: {value}\n")
    code, output = validate(path)
    assert code == 2
    assert "agents.alpha.interface:" in output
    assert "refused" in output or "escapes the fleet folder" in output


def test_a_link_out_of_the_fleet_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "fleet"
    folder.mkdir()
    secret = tmp_path / "secret.md"
    secret.write_text("top secret\n")
    (folder / "alpha.md").symlink_to(secret)
    (folder / "PROJECT.md").symlink_to(secret)
    path = write(folder, BASE + "    interface: alpha.md\n")
    with pytest.raises(ConfigError) as info:
        load_fleet(path)
    found = [str(p) for p in info.value.problems]
    assert any("agents.alpha.interface: path 'alpha.md' escapes the fleet folder" in p for p in found)
    assert any("path 'PROJECT.md' escapes the fleet folder" in p for p in found)


def test_interface_files_inside_the_folder_and_inline_text_still_load(tmp_path: Path) -> None:
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "alpha.md").write_text("---\noperations: []\n---\nFree text.\n")
    path = write(
        tmp_path,
        BASE + "    interface: contracts/alpha.md\n  beta:\n    interface: Send me A/B test results.\n",
    )
    fleet = load_fleet(path)
    assert fleet.interfaces["alpha"].endswith("Free text.\n")
    assert fleet.interfaces["beta"] == "Send me A/B test results."


def test_a_huge_file_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + "# " + "x" * (2 * 1024 * 1024) + "\n")
    code, output = validate(path)
    assert code == 2
    assert "the file is larger than" in output


def interface_bomb() -> str:
    lines = ["---", "operations:", "  - name: work", "    input:", "      type: object", "      $defs:"]
    lines.append("        a0: &a0 {type: string}")
    for level in range(1, 9):
        lines.append(f"        a{level}: &a{level} {{allOf: [{', '.join([f'*a{level - 1}'] * 9)}]}}")
    return "\n".join([*lines, "      allOf: [*a8]", "---", ""])


def test_an_interface_whose_aliases_expand_into_a_huge_schema_is_refused(tmp_path: Path) -> None:
    # Under 1 KiB, within the INTERFACE.md cap: checking the schema it expands to would take hours.
    (tmp_path / "alpha.md").write_text(interface_bomb())
    path = write(tmp_path, BASE + "    interface: alpha.md\n")
    code, output = validate(path)
    assert code == 2
    assert "agents.alpha.interface: INTERFACE.md front matter is not valid YAML on line 11: " in output
    assert "aliases expand to more than" in output


def test_an_agent_cannot_stall_its_peers_with_such_an_interface() -> None:
    from agent_runtime.workspace.contracts import ContractError, parse_interface

    with pytest.raises(ContractError, match="aliases expand to more than"):
        parse_interface(interface_bomb())

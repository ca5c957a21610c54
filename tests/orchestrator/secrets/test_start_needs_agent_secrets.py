"""Starting a fleet needs the secrets its agents use, and only those.

examples/feed-digest declares `feed_token: {env: FEED_TOKEN}`, which its agent `digest` sends
with its HTTP requests. A second secret, declared but used by no agent, is added here; its
environment variable is never set.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.testing.cli import free_port, run_flotilla

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "feed-digest"
UNUSED = "  spare_token: { env: FLOTILLA_TEST_SPARE_TOKEN, hosts: [127.0.0.1] }\n"
USED_BY_DIGEST = "secrets: [feed_token]"


def _environment(**extra: str) -> dict[str, str]:
    unset = {"FEED_TOKEN", "FLOTILLA_TEST_SPARE_TOKEN"}
    return {name: value for name, value in os.environ.items() if name not in unset} | extra


WITH_FEED_TOKEN = _environment(FEED_TOKEN="example-feed-token")


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """feed-digest with a spare secret no agent uses; stopped afterwards if it was started."""
    copy = tmp_path / "feed-digest"
    shutil.copytree(EXAMPLE, copy)
    fleet_file = copy / "fleet.yaml"
    text = fleet_file.read_text()
    declared = "  feed_token: { env: FEED_TOKEN, hosts: [127.0.0.1] }\n"
    assert declared in text and USED_BY_DIGEST in text
    fleet_file.write_text(text.replace(declared, declared + UNUSED))
    yield copy
    if (copy / ".flotilla").exists():
        run_flotilla(copy, "down", "-v", env=WITH_FEED_TOKEN)


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def _up(folder: Path, env: dict[str, str]) -> tuple[int, str, str]:
    result = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()), env=env)
    return result.returncode, result.stdout, result.stderr


def test_validate_warns_about_unset_secrets_and_passes(folder: Path) -> None:
    result = run_flotilla(folder, "validate", env=_environment())

    assert result.returncode == 0, result.stdout + result.stderr
    warnings = [line for line in result.stdout.splitlines() if line.startswith("warning:")]
    assert any("FEED_TOKEN is not set" in line for line in warnings), result.stdout
    assert any("FLOTILLA_TEST_SPARE_TOKEN is not set" in line for line in warnings), result.stdout
    assert "is valid" in result.stdout


def test_validate_json_keeps_its_shape_and_lists_the_warning(folder: Path) -> None:
    result = run_flotilla(folder, "validate", "--json", env=_environment())

    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert set(report) == {"file", "valid", "fleet", "agents", "warnings", "problems", "notes"}
    assert report["valid"] is True and report["problems"] == []
    assert any("FEED_TOKEN is not set" in warning for warning in report["warnings"])


def test_up_refuses_in_one_line_naming_the_agent_the_secret_and_the_variable(folder: Path) -> None:
    code, _stdout, stderr = _up(folder, _environment())

    assert code == 2, stderr
    (error,) = _errors(stderr)
    assert ": agents.digest.tools.http.secrets" in error
    assert "agent 'digest' needs secret 'feed_token'" in error
    assert "FEED_TOKEN is not set on the orchestrator host" in error
    assert "spare_token" not in stderr
    assert not (folder / ".flotilla" / "endpoint.json").exists()


def test_up_and_apply_need_only_the_secrets_agents_use(folder: Path) -> None:
    code, stdout, stderr = _up(folder, WITH_FEED_TOKEN)
    assert code == 0, stdout + stderr
    assert "FLOTILLA_TEST_SPARE_TOKEN" not in stdout + stderr

    applied = run_flotilla(folder, "apply", env=WITH_FEED_TOKEN)
    assert applied.returncode == 0, applied.stdout + applied.stderr

    fleet_file = folder / "fleet.yaml"
    fleet_file.write_text(
        fleet_file.read_text().replace(USED_BY_DIGEST, "secrets: [feed_token, spare_token]")
    )
    refused = run_flotilla(folder, "apply", env=WITH_FEED_TOKEN)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    (error,) = _errors(refused.stderr)
    assert "agent 'digest' needs secret 'spare_token'" in error
    assert "FLOTILLA_TEST_SPARE_TOKEN is not set on the orchestrator host" in error

"""examples/feed-digest: its fleet is valid with both host tools, and the exec call its README
drives (exec_call.py: instructions.md's script with the served feed pasted in) summarises the
feed into MEMORY.md. The docker test runs the whole example (test_feed_digest_example_docker.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.config.loader import load_fleet
from orchestrator.running_agents.session import tool_settings


def test_the_feed_digest_example_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FEED_TOKEN", "example-feed-token")
    example = Path(__file__).resolve().parents[3] / "examples" / "feed-digest" / "fleet.yaml"
    fleet = load_fleet(example)
    policy = fleet.config.agents["digest"].tools.http
    assert policy is not None and policy.secrets == ["feed_token"]
    assert sorted(tool_settings(fleet, "digest").host_tools) == ["exec", "http_request"]
    exec_policy = fleet.config.agents["digest"].tools.exec
    assert exec_policy is not None and exec_policy.timeout_s == 10


def test_the_feed_digest_script_summarises_the_feed_into_memory(tmp_path: Path) -> None:
    """The exec call exec_call.py prints (instructions.md's script, the served feed pasted in)
    rewrites only the digest section of MEMORY.md, and says what is new."""
    folder = Path(__file__).resolve().parents[3] / "examples" / "feed-digest"
    printed = subprocess.run(
        [sys.executable, "exec_call.py"], cwd=folder, capture_output=True, text=True, check=True
    ).stdout
    directive, _, arguments = printed.partition(" {")
    assert directive == "call exec"
    call = json.loads("{" + arguments)
    assert call["files"] == ["MEMORY.md"] and call["outputs"] == ["MEMORY.md"]
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "MEMORY.md").write_text("# Memory\n- the operator likes short digests\n")
    script = call["python"].replace("/workspace/", f"{workspace}/")
    for expected in ("3 new", "0 new"):
        ran = subprocess.run(
            [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True
        )
        assert ran.stdout.strip() == f"3 releases in the feed, {expected}"
        shutil.copy(tmp_path / "MEMORY.md", workspace / "MEMORY.md")
    memory = (workspace / "MEMORY.md").read_text()
    assert memory.startswith("# Memory\n- the operator likes short digests\n\n## Release digest\n")
    assert memory.count("## Release digest") == 1 and "- 2.3.1: memory use of idle agents halved" in memory

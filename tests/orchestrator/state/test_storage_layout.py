"""The operator's side of an agent's state: token files, the one-time import of the previous
layout, and the agent's workspace writes arriving over its link.

Everything an agent wrote is treated as hostile: links are planted where the orchestrator
once read or wrote, and nothing outside the agent's own storage may be touched.
"""

from __future__ import annotations

import os
import stat
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_runtime.protocol import ChannelCheckIn, ChannelWorkspaceWrite, CheckIn, WorkspaceWrite
from agent_runtime.transport.channel import AgentChannel
from agent_runtime.transport.errors import OrchestratorRefused
from agent_runtime.workspace.versioned import Workspace
from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.fleet.scaffold import (
    has_previous_layout,
    import_previous_layout,
    prepare_operator_copy,
    write_token,
)
from orchestrator.services import Services
from orchestrator.state.paths import StatePaths
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import attach_subsystems, core_services, fleet_manager

FLEET = """\
version: 1
fleet: layout
agents:
  alpha:
    role: researcher
    soul: I am alpha.
"""


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(textwrap.dedent(FLEET))
    core = core_services(load_fleet(fleet_file), FakeBackend())
    core.operator_token = core.tokens.mint_operator()
    built = attach_subsystems(core, fleet_manager(core))
    prepare_operator_copy(built.fleet, "alpha", built.paths)
    yield built
    built.db.close()


# --- the token file --------------------------------------------------------------------------


def test_the_token_file_is_private_to_the_orchestrator_and_rewritten_in_place(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / ".flotilla")
    first = write_token(paths, "alpha", "first-token")
    inode = first.stat().st_ino
    again = write_token(paths, "alpha", "second")
    assert again.read_text() == "second"
    # Same inode: a container holding the file as a bind mount sees the new token.
    assert again.stat().st_ino == inode
    assert stat.S_IMODE(paths.tokens.stat().st_mode) == 0o700
    assert stat.S_IMODE(again.stat().st_mode) & 0o222 == 0


def test_a_link_planted_as_the_token_file_is_never_followed(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / ".flotilla")
    victim = tmp_path / "victim.conf"
    victim.write_text("precious\n")
    paths.tokens.mkdir(parents=True)
    paths.token_file("alpha").symlink_to(victim)
    with pytest.raises(OSError):
        write_token(paths, "alpha", "token")
    assert victim.read_text() == "precious\n"


# --- the previous layout ---------------------------------------------------------------------


def _previous_layout_folder(paths: StatePaths, host_secret: Path) -> Path:
    """An agent folder as the previous layout left it, with an agent's traps in it."""
    old = paths.agent_dir("alpha")
    (old / "workspace").mkdir(parents=True)
    (old / ".runtime").mkdir()
    (old / ".runtime" / "token").write_text("old-token")
    (old / "memory.db").write_bytes(b"SQLite format 3\x00")
    (old / "workspace" / "SOUL.md").write_text("I am alpha, and I learned things.\n")
    (old / "workspace" / "USER.md").symlink_to(host_secret)
    (old / "workspace" / "MEMORY.md").write_text("x" * (64 * 1024))  # over MEMORY.md's cap
    (old / "workspace" / "INSTRUCTIONS.md").write_bytes(b"\xff\xfe not text")
    return old


def test_the_previous_layout_is_moved_aside_and_only_real_small_text_files_imported(
    tmp_path: Path,
) -> None:
    paths = StatePaths(tmp_path / ".flotilla")
    secret = tmp_path / "host-secret"
    secret.write_text("host secret\n")
    secret.chmod(0o600)
    _previous_layout_folder(paths, secret)
    assert has_previous_layout(paths, "alpha")
    imported = import_previous_layout(paths, "alpha")
    assert imported == ["SOUL.md"]
    workspace = Workspace(paths.agent_dir("alpha"))
    assert workspace.read("SOUL.md") == "I am alpha, and I learned things.\n"
    assert workspace.history("SOUL.md")[-1].author == "system"
    assert not has_previous_layout(paths, "alpha")
    kept = list(paths.previous_layout.iterdir())
    assert len(kept) == 1 and (kept[0] / "memory.db").is_file()
    for root, _dirs, files in os.walk(paths.agent_dir("alpha")):
        for name in files:
            assert "host secret" not in (Path(root) / name).read_text(errors="replace")


def test_a_previous_layout_whose_workspace_is_a_link_imports_nothing(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path / ".flotilla")
    host = tmp_path / "host"
    host.mkdir()
    (host / "SOUL.md").write_text("host file\n")
    old = paths.agent_dir("alpha")
    old.mkdir(parents=True)
    (old / ".runtime").mkdir()
    (old / "workspace").symlink_to(host, target_is_directory=True)
    assert import_previous_layout(paths, "alpha") == []
    assert Workspace(paths.agent_dir("alpha")).read("SOUL.md") == ""


# --- the agent's writes over its link -----------------------------------------------------


def _write(channel: AgentChannel, name: str, content: str, author: str = "agent") -> object:
    frame = ChannelWorkspaceWrite(
        name=name, write=WorkspaceWrite.model_validate({"content": content, "author": author})
    )
    return channel.call(frame, 10).body


def test_an_agents_write_goes_through_the_capped_versioned_path_of_the_operator_copy(
    services: Services,
) -> None:
    token = services.tokens.mint("alpha")
    workspace = Workspace(services.paths.agent_dir("alpha"))
    with serve_app(create_app(services)) as url:
        channel = AgentChannel(url, lambda: token)
        try:
            channel.call(ChannelCheckIn(checkin=CheckIn(state="busy", pid=os.getpid(), uptime_s=0.0)), 10)
            accepted = _write(channel, "USER.md", "The operator likes tea.\n")
            assert accepted == {"name": "USER.md", "size": 24, "version": 2}
            last = workspace.history("USER.md")[-1]
            assert (last.author, last.version) == ("agent", 2)
            with pytest.raises(OrchestratorRefused) as too_big:
                _write(channel, "USER.md", "x" * 5000)
            assert too_big.value.status == 413
            # Claiming to be the operator changes nothing: the generated files stay read-only.
            with pytest.raises(OrchestratorRefused) as read_only:
                _write(channel, "SYSTEM.md", "I am root now", author="operator")
            assert read_only.value.status == 403
            _write(channel, "SOUL.md", "I am alpha, rewritten.\n", author="operator")
            assert workspace.history("SOUL.md")[-1].author == "agent"
        finally:
            channel.close()
    assert workspace.read("USER.md") == "The operator likes tea.\n"
    changed = [e for e in services.events.recent(agent="alpha") if e.type == "workspace.changed"]
    assert changed[-1].data["author"] == "agent" and changed[-1].data["source"] == "agent"

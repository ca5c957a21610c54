"""Prepare the operator's side of an agent before its unit starts: its workspace copy and token.

Seeds (SOUL, INSTRUCTIONS, USER, INTERFACE, HEARTBEAT) are written only when missing, so a
restart never overwrites what the agent or the operator wrote. AGENTS.md, SYSTEM.md and
PROJECT.md are generated and refreshed on every start.
"""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from pathlib import Path

from agent_runtime import (
    CAPS,
    READ_ONLY,
    WORKSPACE_FILES,
    Workspace,
    WorkspaceError,
    scaffold,
)
from orchestrator.config.fleet import LoadedFleet
from orchestrator.config.workspace_texts import render_agents_md, render_soul_md, render_system_md
from orchestrator.scheduler.rules import render_heartbeat_md
from orchestrator.state.paths import StatePaths

AGENT_UID = 10001


def generated_files(fleet: LoadedFleet, agent: str) -> dict[str, str]:
    """The read-only files the orchestrator writes for an agent, refreshed whenever they change."""
    readonly = {"AGENTS.md": render_agents_md(fleet, agent), "SYSTEM.md": render_system_md(fleet, agent)}
    if fleet.project_md is not None:
        readonly["PROJECT.md"] = fleet.project_md
    return readonly


def refresh_generated(fleet: LoadedFleet, agent: str, paths: StatePaths) -> list[str]:
    """Rewrite the generated files in the operator's copy (its peers or the project changed);
    the names, for the caller to send to the running agent."""
    generated = generated_files(fleet, agent)
    scaffold(paths.agent_dir(agent), {}, generated)
    return list(generated)


def prepare_operator_copy(fleet: LoadedFleet, agent: str, paths: StatePaths) -> None:
    """Seed the operator's copy of the workspace and refresh its generated files.

    The copy lives in an orchestrator-owned folder that no unit ever mounts; the agent receives
    it over its link.
    """
    seeds = seed_files(fleet, agent) | {"MEMORY.md": "# Memory\n"}
    scaffold(paths.agent_dir(agent), seeds, generated_files(fleet, agent))


def seed_files(fleet: LoadedFleet, agent: str) -> dict[str, str]:
    """The workspace files fleet.yaml seeds, as fleet.yaml says them now."""
    config = fleet.config.agents[agent]
    heartbeat = fleet.config.heartbeat_of(agent)
    return {
        "SOUL.md": render_soul_md(fleet, agent),
        "INSTRUCTIONS.md": config.instructions,
        "USER.md": config.user,
        "INTERFACE.md": fleet.interfaces.get(agent, ""),
        "HEARTBEAT.md": render_heartbeat_md(heartbeat.rules if heartbeat else []),
    }


def write_token(paths: StatePaths, agent: str, token: str) -> Path:
    """Write the agent's token where only the orchestrator writes; its unit reads it read-only.

    The file is rewritten in place (not renamed over): a container holds it as a single-file
    bind mount, which keeps pointing at the file's first inode.
    """
    paths.tokens.mkdir(mode=0o700, parents=True, exist_ok=True)
    paths.tokens.chmod(0o700)
    path = paths.token_file(agent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o400)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        if os.geteuid() == 0:
            # Root keeps the file; the container's group may read it, nobody else.
            os.fchown(fd, 0, AGENT_UID)
            os.fchmod(fd, 0o440)
        else:
            # Without root the group cannot be given away: the folder (0700) keeps others out.
            os.fchmod(fd, 0o444)
        os.ftruncate(fd, 0)
        os.write(fd, token.encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


# --- the previous layout, where an agent's /data was this folder ------------------------------

PREVIOUS_LAYOUT_MARKERS = (".runtime", "memory.db", "history")
IMPORT_REASON = "imported from the previous storage layout"


def has_previous_layout(paths: StatePaths, agent: str) -> bool:
    """The agent's folder was once mounted into its container (it holds the agent's own files)."""
    folder = paths.agent_dir(agent)
    return any(os.path.lexists(folder / marker) for marker in PREVIOUS_LAYOUT_MARKERS)


def import_previous_layout(paths: StatePaths, agent: str) -> list[str]:
    """Move the shared folder aside and take its workspace files into a fresh operator copy.

    Run once, after the agent's old unit is gone and before any unit of the new layout runs.
    Everything in the old folder was writable by the agent, so it is read as untrusted: the
    folder is renamed (never entered), and only regular files are read, through descriptors
    opened without following links, each capped at its file's size limit. Anything else (the
    agent's memory database, history, learnings) stays in `.flotilla/previous-layout/`.
    Returns the files imported.
    """
    paths.previous_layout.mkdir(mode=0o700, parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    kept = paths.previous_layout / f"{agent}-{stamp}"
    os.rename(paths.agent_dir(agent), kept)
    workspace = Workspace(paths.agent_dir(agent))
    imported = []
    for name in WORKSPACE_FILES:
        if name in READ_ONLY:
            continue  # generated again from fleet.yaml
        text = read_untrusted(kept, ("workspace", name), CAPS[name] or IMPORT_LIMIT)
        if text is None:
            continue
        try:
            workspace.write(name, text, "system", IMPORT_REASON)
        except WorkspaceError:
            continue
        imported.append(name)
    return imported


IMPORT_LIMIT = 256 * 1024


def previous_layout_folder(paths: StatePaths, agent: str) -> Path | None:
    """The newest folder that `import_previous_layout` set aside for the agent."""
    if not paths.previous_layout.is_dir():
        return None
    kept = sorted(p for p in paths.previous_layout.iterdir() if p.name.startswith(f"{agent}-"))
    return kept[-1] if kept else None


def read_untrusted(root: Path, parts: tuple[str, ...], limit: int) -> str | None:
    """The UTF-8 text of root/parts when every step is a real folder or file, never a link,
    and the file is at most `limit` bytes; None otherwise."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        folder = os.open(root, flags | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        for part in parts[:-1]:
            inner = os.open(part, flags | os.O_DIRECTORY, dir_fd=folder)
            os.close(folder)
            folder = inner
        fd = os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        os.close(folder)
        return None
    os.close(folder)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        data = handle.read(limit + 1)
    if len(data) > limit:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None

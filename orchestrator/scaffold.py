"""Prepare an agent's state folder on the host before its unit starts.

Seeds (SOUL, INSTRUCTIONS, USER, INTERFACE, HEARTBEAT) are written only when missing, so a
restart never overwrites what the agent or the operator wrote. AGENTS.md, SYSTEM.md and
PROJECT.md are generated and refreshed on every start.
"""

from __future__ import annotations

import os
from pathlib import Path

from agent_runtime.contracts import ContractError, parse_interface
from agent_runtime.workspace import scaffold
from orchestrator.config.loader import LoadedFleet
from orchestrator.scheduler.rules import render_heartbeat_md

TOKEN_FILE = Path(".runtime") / "token"
AGENT_UID = 10001


def _soul(fleet: LoadedFleet, agent: str) -> str:
    config = fleet.config.agents[agent]
    if config.soul:
        return config.soul.strip() + "\n"
    role = config.role or "a member of this fleet"
    return f"# {agent}\n\nYou are {agent}, {role}.\n"


def render_soul_md(fleet: LoadedFleet, agent: str) -> str:
    """SOUL.md as fleet.yaml seeds it (from `soul`, or from `role` when no soul is given)."""
    return _soul(fleet, agent)


def _peer_section(fleet: LoadedFleet, peer: str) -> str:
    config = fleet.config.agents[peer]
    lines = [f"## {peer}", "", f"Role: {config.role or 'not stated'}", ""]
    try:
        interface = parse_interface(fleet.interfaces.get(peer, ""))
    except ContractError as exc:
        return "\n".join([*lines, f"(its INTERFACE.md does not parse: {exc})", ""])
    if interface.operations:
        lines.append("Operations (call them with ask_agent):")
        lines += [f"- `{op.name}`: {op.description or 'no description'}" for op in interface.operations]
    else:
        lines.append("No typed operations; send it free text with tell_agent.")
    return "\n".join([*lines, ""])


def render_agents_md(fleet: LoadedFleet, agent: str) -> str:
    peers = fleet.config.agents[agent].talks_to
    others = [name for name in fleet.config.agents if name != agent and name not in peers]
    parts = [f"# The fleet {fleet.name}: your peers", ""]
    if not peers:
        parts.append("You talk to no other agent.\n")
    parts += [_peer_section(fleet, peer) for peer in peers]
    if others:
        parts += ["## Other agents (you may not contact them)", "", *[f"- {name}" for name in others], ""]
    return "\n".join(parts)


def render_system_md(fleet: LoadedFleet, agent: str) -> str:
    config = fleet.config
    return (
        f"# System\n\n"
        f"You are the agent `{agent}` in the fleet `{config.fleet}`, run by Flotilla.\n\n"
        f"- Your model: {config.model_of(agent)}.\n"
        "- Your workspace is /data/workspace. SOUL.md, INSTRUCTIONS.md, USER.md, MEMORY.md, INTERFACE.md "
        "and HEARTBEAT.md change only through the update_workspace tool, which enforces size caps.\n"
        "- SYSTEM.md, AGENTS.md and PROJECT.md are maintained by the orchestrator and are read-only.\n"
        "- You reach other agents only through ask_agent and tell_agent, and only those in AGENTS.md.\n"
        "- When someone corrects you, call record_correction so you do not repeat the mistake.\n"
        "- Save durable facts with memory_save; look things up with memory_search before guessing.\n"
    )


def generated_files(fleet: LoadedFleet, agent: str) -> dict[str, str]:
    """The read-only files the orchestrator writes for an agent, refreshed whenever they change."""
    readonly = {"AGENTS.md": render_agents_md(fleet, agent), "SYSTEM.md": render_system_md(fleet, agent)}
    if fleet.project_md is not None:
        readonly["PROJECT.md"] = fleet.project_md
    return readonly


def refresh_generated(fleet: LoadedFleet, agent: str, data_dir: Path) -> None:
    """Rewrite the generated files of a running agent (its peers or the project changed)."""
    scaffold(data_dir, {}, generated_files(fleet, agent))


def prepare_agent_dir(fleet: LoadedFleet, agent: str, data_dir: Path, token: str, chown: bool) -> None:
    """Scaffold the workspace, write the agent's token file and, for containers, hand it the folder."""
    config = fleet.config.agents[agent]
    heartbeat = fleet.config.heartbeat_of(agent)
    seeds = {
        "SOUL.md": _soul(fleet, agent),
        "INSTRUCTIONS.md": config.instructions,
        "USER.md": config.user,
        "MEMORY.md": "# Memory\n",
        "INTERFACE.md": fleet.interfaces.get(agent, ""),
        "HEARTBEAT.md": render_heartbeat_md(heartbeat.rules if heartbeat else []),
    }
    scaffold(data_dir, seeds, generated_files(fleet, agent))
    token_path = data_dir / TOKEN_FILE
    token_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = token_path.with_suffix(".tmp")
    tmp.write_text(token)
    tmp.chmod(0o600)
    tmp.replace(token_path)
    if chown:
        _hand_over(data_dir)


def _hand_over(data_dir: Path) -> None:
    """Give the container's non-root user the folder; setgid dirs keep host edits writable to it."""
    for root, dirs, files in os.walk(data_dir):
        os.chown(root, AGENT_UID, AGENT_UID)
        os.chmod(root, 0o2775)
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chown(path, AGENT_UID, AGENT_UID)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]

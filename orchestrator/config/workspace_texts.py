"""The workspace texts an agent's settings in fleet.yaml make: SOUL.md as seeded, and the
read-only AGENTS.md and SYSTEM.md the orchestrator generates.

Pure functions of the loaded fleet: the settings digest (`settings`) compares them, `validate`
checks them against the workspace's caps, and `fleet.scaffold` writes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_runtime import ContractError, parse_interface

if TYPE_CHECKING:
    from orchestrator.config.fleet import LoadedFleet


def render_soul_md(fleet: LoadedFleet, agent: str) -> str:
    """SOUL.md as fleet.yaml seeds it (from `soul`, or from `role` when no soul is given)."""
    config = fleet.config.agents[agent]
    if config.soul:
        return config.soul.strip() + "\n"
    role = config.role or "a member of this fleet"
    return f"# {agent}\n\nYou are {agent}, {role}.\n"


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


OTHERS_LISTED = 20
"""Agents an agent may not contact are named up to this many, then "and others": in a fleet of a
thousand, naming them all would put 999 names in every agent's prompt, and adding one agent
would rewrite every agent's AGENTS.md."""


def render_agents_md(fleet: LoadedFleet, agent: str) -> str:
    peers = fleet.config.agents[agent].talks_to
    others = [name for name in fleet.config.agents if name != agent and name not in peers]
    parts = [f"# The fleet {fleet.name}: your peers", ""]
    if not peers:
        parts.append("You talk to no other agent.\n")
    parts += [_peer_section(fleet, peer) for peer in peers]
    if others:
        listed = [f"- {name}" for name in others[:OTHERS_LISTED]]
        if len(others) > OTHERS_LISTED:
            listed.append("- and others")
        parts += ["## Other agents (you may not contact them)", "", *listed, ""]
    return "\n".join(parts)


def render_system_md(fleet: LoadedFleet, agent: str) -> str:
    config = fleet.config
    return (
        f"# System\n\n"
        f"You are the agent `{agent}` in the fleet `{config.fleet}`, run by Flotilla.\n\n"
        f"- Your model: {config.model_of(agent)}.\n"
        "- Your workspace is /data/workspace, a working copy of the operator's. SOUL.md, INSTRUCTIONS.md, USER.md, MEMORY.md, INTERFACE.md "
        "and HEARTBEAT.md change only through the update_workspace tool, which enforces size caps.\n"
        "- SYSTEM.md, AGENTS.md and PROJECT.md are maintained by the orchestrator and are read-only.\n"
        "- You reach other agents only through ask_agent and tell_agent, and only those in AGENTS.md.\n"
        "- When someone corrects you, call record_correction so you do not repeat the mistake.\n"
        "- Save durable facts with memory_save; look things up with memory_search before guessing.\n"
    )

"""The checks that need the whole fleet: what `up` would otherwise refuse half-way through.

Seeded workspace files against their caps and validators, the contracts (what `flotilla
contracts check` checks), heartbeat rules, and resources against what the engine can give.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agent_runtime import InvalidContent, Workspace, WorkspaceError
from orchestrator.config.fleet import set_aside_under
from orchestrator.config.models import DNS_LABEL
from orchestrator.config.reserved import reserved_reason
from orchestrator.config.secret_checks import check_secrets
from orchestrator.config.units import format_bytes
from orchestrator.workflows.validation import check_workflows

if TYPE_CHECKING:
    from orchestrator.config.capacity import Capacity
    from orchestrator.config.fleet import LoadedFleet, Problems
    from orchestrator.config.safe_yaml import FieldPath

# Where each seeded or generated workspace file comes from in fleet.yaml, for messages.
SEED_FIELDS: dict[str, str] = {
    "SOUL.md": "soul",
    "INSTRUCTIONS.md": "instructions",
    "USER.md": "user",
    "INTERFACE.md": "interface",
    "HEARTBEAT.md": "heartbeat",
    "AGENTS.md": "talks_to",
    "SYSTEM.md": "model",
}
CONTRACT_SOURCES: dict[str, FieldPath] = {
    "interface": ("interface",),
    "talks_to": ("talks_to",),
    "instructions": ("instructions",),
    "soul": ("soul",),
    "heartbeat rules": ("heartbeat", "rules"),
}


def agent_name_problem(name: str) -> str | None:
    """What is wrong with an agent's name. Names the orchestrator keeps for itself plug in here."""
    if not DNS_LABEL.match(name):
        return f"invalid agent name {name!r}: use a DNS label (a-z, 0-9, '-')"
    if reason := reserved_reason(name):
        return f"agent name {name!r} is reserved ({reason}); choose another name"
    return None


def check_fleet(
    fleet: LoadedFleet,
    problems: Problems,
    capacity: Capacity | None,
    set_aside: set[str],
    raw: dict[str, Any],
    *,
    contracts: bool = True,
    secrets: bool = True,
) -> None:
    """`raw` is the file as parsed: rules are checked there, even where the schema failed.
    `secrets=False`: a secret's value that cannot be read is a warning, not a problem."""
    known = _known_peers_only(fleet)
    _check_seeds(known, problems)
    if contracts:
        _check_contracts(known, problems)
    _check_rules(raw, problems)
    _check_mcp_credentials(fleet, problems, secrets)
    check_secrets(fleet, problems, values_needed=secrets)
    _check_exec_runtime(fleet, problems)
    _check_host_tool_rules(fleet, problems)
    check_workflows(fleet, problems)
    if capacity is not None:
        check_resources(fleet, problems, capacity, set_aside)


def _known_peers_only(fleet: LoadedFleet) -> LoadedFleet:
    """The fleet with talks_to entries naming unknown agents (or the agent itself) left out: those
    are reported already, and the agents set aside for schema errors are not there to render."""
    from orchestrator.config.fleet import LoadedFleet

    config = fleet.config
    agents = {
        name: agent.model_copy(
            update={"talks_to": [p for p in agent.talks_to if p in config.agents and p != name]}
        )
        for name, agent in config.agents.items()
    }
    trimmed = config.model_copy(update={"agents": agents})
    return LoadedFleet(trimmed, fleet.path, fleet.interfaces, fleet.project_md)


def _check_seeds(fleet: LoadedFleet, problems: Problems) -> None:
    """Each file fleet.yaml seeds or generates, as the workspace would check it when written."""
    from orchestrator.fleet.scaffold import render_agents_md, render_soul_md, render_system_md
    from orchestrator.scheduler.rules import render_heartbeat_md

    # Only checked, never written: the folder is not touched.
    checker = Workspace(Path("/nonexistent"))
    for name, agent in fleet.config.agents.items():
        heartbeat = fleet.config.heartbeat_of(name)
        texts = {
            "SOUL.md": render_soul_md(fleet, name),
            "INSTRUCTIONS.md": agent.instructions,
            "USER.md": agent.user,
            "INTERFACE.md": fleet.interfaces.get(name, ""),
            "HEARTBEAT.md": render_heartbeat_md(heartbeat.rules if heartbeat else []),
            "AGENTS.md": render_agents_md(fleet, name),
            "SYSTEM.md": render_system_md(fleet, name),
        }
        for file_name, text in texts.items():
            source = SEED_FIELDS[file_name]
            if file_name == "SOUL.md" and not agent.soul:
                source = "role"
            try:
                checker.check(file_name, text, "system")
            except InvalidContent:
                continue  # a contract that does not parse: the contracts check names what is wrong
            except WorkspaceError as bad:
                message = str(bad).removesuffix("; the file is unchanged")
                problems.add(("agents", name, source), f"seeds {file_name}: {message}")


def _check_contracts(fleet: LoadedFleet, problems: Problems) -> None:
    """The contracts as fleet.yaml seeds them, and the references to them in its texts."""
    from orchestrator.broker.contracts_check import check_seeded

    report = check_seeded(fleet)
    for issue in report.issues:
        where = ("agents", issue.agent, *CONTRACT_SOURCES.get(issue.source or "", ()))
        if issue.level == "error":
            if issue.source == "interface" and issue.message.startswith("fleet.yaml interface: "):
                problems.add(where, "INTERFACE.md " + issue.message.removeprefix("fleet.yaml interface: "))
            else:
                problems.add(where, issue.message)
        else:
            problems.warn(where, issue.message)


def _rule_lists(raw: dict[str, Any]) -> list[tuple[FieldPath, Any, Any]]:
    """(where, rules, tz) of every heartbeat section in the parsed file."""
    found: list[tuple[FieldPath, Any]] = []
    defaults = raw.get("defaults")
    if isinstance(defaults, dict):
        found.append((("defaults", "heartbeat"), defaults.get("heartbeat")))
    agents = raw.get("agents")
    if isinstance(agents, dict):
        found += [
            (("agents", str(n), "heartbeat"), a.get("heartbeat"))
            for n, a in agents.items()
            if isinstance(a, dict)
        ]
    return [(where, hb.get("rules"), hb.get("tz")) for where, hb in found if isinstance(hb, dict)]


def _check_rules(raw: dict[str, Any], problems: Problems) -> None:
    from orchestrator.config.models import rule_lines
    from orchestrator.scheduler.rules import parse_rule_lines

    for where, written, tz in _rule_lists(raw):
        try:
            rules = rule_lines(written)
        except ValueError:
            continue  # the schema check reports it
        if not isinstance(rules, list) or not all(isinstance(rule, str) for rule in rules):
            continue  # the schema check reports it
        zone = tz if isinstance(tz, str) and _known_zone(tz) else "UTC"
        for error in parse_rule_lines(rules, zone).errors:
            problems.add((*where, "rules", error.line - 1), f"rule {error.text!r}: {error.message}")


def _check_mcp_credentials(fleet: LoadedFleet, problems: Problems, values_needed: bool) -> None:
    """Each ${NAME} in an HTTP MCP server's headers names a variable of the orchestrator host's
    environment: the orchestrator reads it there for every call (agents never see it)."""
    report = problems.add if values_needed else problems.warn
    for agent_name, agent in fleet.config.agents.items():
        for index, server in enumerate(agent.tools.mcp):
            for header, names in server.header_variables().items():
                for name in names:
                    if name not in os.environ:
                        report(
                            ("agents", agent_name, "tools", "mcp", index, "headers", header),
                            f"MCP server {server.name}: header {header} names the environment variable "
                            f"{name}, which is not set on the orchestrator host",
                        )


def _check_exec_runtime(fleet: LoadedFleet, problems: Problems) -> None:
    """The process runtime cannot sandbox: say so where exec is declared for it."""
    if fleet.config.runtime != "process":
        return
    for agent_name, agent in fleet.config.agents.items():
        policy = agent.tools.exec
        if policy is not None and not policy.allow_unsandboxed:
            problems.warn(
                ("agents", agent_name, "tools", "exec"),
                "the process runtime cannot sandbox code: every exec call will be refused "
                "(run the docker runtime, or set allow_unsandboxed: true to run commands on the host)",
            )


HOST_TOOL_FIELDS = {
    "http_request": "tools.http",
    "exec": "tools.exec",
    "notify": "channels",
}


def _check_host_tool_rules(fleet: LoadedFleet, problems: Problems) -> None:
    """A rule on a host tool the agent is not given does nothing: most likely a forgotten policy."""
    for agent_name, agent in fleet.config.agents.items():
        given = {
            "http_request": agent.tools.http is not None,
            "exec": agent.tools.exec is not None,
            "notify": bool(agent.channels),
        }
        for tool, field in HOST_TOOL_FIELDS.items():
            if tool in agent.tools.rules and not given[tool]:
                problems.warn(
                    ("agents", agent_name, "tools", "rules", tool),
                    f"the rule on {tool} has no effect: agent {agent_name} has no {tool} tool "
                    f"(declare agents.{agent_name}.{field} to give it one)",
                )


def _known_zone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def check_resources(fleet: LoadedFleet, problems: Problems, capacity: Capacity, set_aside: set[str]) -> None:
    config = fleet.config
    for name in config.agents:
        own = config.agents[name].resources is not None
        if not own and set_aside_under(set_aside, "defaults"):
            continue
        where: FieldPath = ("agents", name, "resources") if own else ("defaults", "resources")
        resources = config.resources_of(name)
        if resources.memory_bytes > capacity.memory_bytes:
            problems.add(
                (*where, "memory"),
                f"memory {resources.memory!r} is more than {capacity.source} has "
                f"({format_bytes(capacity.memory_bytes)})",
            )
        if resources.cpus > capacity.cpus:
            problems.add(
                (*where, "cpus"),
                f"cpus {resources.cpus:g} is more than {capacity.source} has ({capacity.cpus:g})",
            )

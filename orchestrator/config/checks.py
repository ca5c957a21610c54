"""The checks that need the whole fleet: what `up` would otherwise refuse half-way through.

The checks registered by the packages above config (`fleet_checks`: seeded workspace files,
contracts, heartbeat rules, secrets), then MCP credentials, host tool rules, and resources
against what the engine can give.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from orchestrator.config.fleet import set_aside_under
from orchestrator.config.fleet_checks import FLEET_CHECKS, CheckedFleet
from orchestrator.config.models import DNS_LABEL
from orchestrator.config.reserved import reserved_reason
from orchestrator.config.units import format_bytes

if TYPE_CHECKING:
    from orchestrator.config.capacity import Capacity
    from orchestrator.config.fleet import LoadedFleet, Problems
    from orchestrator.config.safe_yaml import FieldPath


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
    checked = CheckedFleet(_known_peers_only(fleet), raw, contracts, secrets)
    for registered in FLEET_CHECKS.fleet.values():
        registered(checked, problems)
    _check_mcp_credentials(fleet, problems, secrets)
    _check_exec_runtime(fleet, problems)
    _check_host_tool_rules(fleet, problems)
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

"""`contracts check`: does every contract parse, and do the ACLs and references agree with them?

Works on a running orchestrator's state and offline, from fleet.yaml and the workspaces on disk.
An operation is referenced as `peer.operation` (in backticks) in an agent's instructions, soul,
heartbeat rules, or its workspace's INSTRUCTIONS.md / HEARTBEAT.md / SOUL.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from orchestrator.broker.interfaces import INTERFACE_FILE, InterfaceStore
from orchestrator.config.fleet import LoadedFleet
from orchestrator.state.paths import StatePaths

REFERENCE = re.compile(r"`([a-z0-9][a-z0-9-]*)\.([A-Za-z_][A-Za-z0-9_]*)(?:\(\))?`")
# `writer.md` names a file, not an operation of an agent called writer.
FILE_SUFFIXES = frozenset({"md", "txt", "json", "yaml", "yml", "py", "csv", "log", "toml", "html"})
WORKSPACE_TEXTS = ("INSTRUCTIONS.md", "HEARTBEAT.md", "SOUL.md")


class ContractIssue(BaseModel):
    level: Literal["error", "warning"]
    agent: str
    message: str
    source: str | None = Field(
        default=None,
        description="What of the agent's the issue is about: interface, talks_to, instructions, soul, "
        "heartbeat rules, or a workspace file",
    )


class AgentContract(BaseModel):
    agent: str
    source: str = Field(description="Where the contract in force comes from: a workspace file or fleet.yaml")
    operations: list[str]
    talks_to: list[str]


class ContractsReport(BaseModel):
    ok: bool = Field(description="True when no issue is an error")
    agents: list[AgentContract]
    issues: list[ContractIssue]


TextSource = Callable[[str], list[tuple[str, str]]]


def check_running(fleet: LoadedFleet, interfaces: InterfaceStore, paths: StatePaths) -> ContractsReport:
    """Check the running fleet, with the contracts the broker holds in force."""
    return check(fleet, interfaces, _texts_of(fleet, paths))


def check_offline(fleet: LoadedFleet) -> ContractsReport:
    """Check offline: a loaded fleet and the workspaces next to its file."""
    paths = StatePaths.for_fleet_file(fleet.path)
    store = InterfaceStore(lambda agent: fleet.interfaces.get(agent, ""), paths.workspace)
    return check(fleet, store, _texts_of(fleet, paths))


def check_seeded(fleet: LoadedFleet) -> ContractsReport:
    """Check what fleet.yaml alone says: the contracts it seeds and the references in its texts."""
    nowhere = Path("/nonexistent")
    store = InterfaceStore(lambda agent: fleet.interfaces.get(agent, ""), lambda agent: nowhere)
    return check(fleet, store, _fleet_texts_of(fleet))


def check(fleet: LoadedFleet, store: InterfaceStore, texts_of: TextSource) -> ContractsReport:
    config = fleet.config
    issues: list[ContractIssue] = []
    agents: list[AgentContract] = []
    operations: dict[str, set[str]] = {}

    for name, agent in config.agents.items():
        seeded = store.seeded(name)
        if seeded.problem:
            issues.append(
                ContractIssue(level="error", agent=name, message=seeded.problem, source="interface")
            )
        state = store.state(name)
        if state.problem and state.problem != seeded.problem:
            issues.append(
                ContractIssue(
                    level="error",
                    agent=name,
                    message=f"{state.problem} (the contract from {state.source} stays in force)",
                    source=f"workspace {INTERFACE_FILE}",
                )
            )
        operations[name] = set(state.interface.operation_names)
        agents.append(
            AgentContract(
                agent=name,
                source=state.source,
                operations=state.interface.operation_names,
                talks_to=list(agent.talks_to),
            )
        )

    issues += _acl_issues(fleet, operations)
    for name in config.agents:
        issues += _reference_issues(fleet, name, operations, texts_of(name))
    return ContractsReport(
        ok=not any(issue.level == "error" for issue in issues), agents=agents, issues=issues
    )


def _acl_issues(fleet: LoadedFleet, operations: dict[str, set[str]]) -> list[ContractIssue]:
    config = fleet.config
    issues: list[ContractIssue] = []
    callers: dict[str, list[str]] = {name: [] for name in config.agents}
    for workflow, declared in config.workflows.items():  # a workflow's steps call operations too
        for step in declared.steps.values():
            if step.agent in callers and step.operation is not None:
                callers[step.agent].append(f"workflow:{workflow}")
    for name, agent in config.agents.items():
        for peer in agent.talks_to:
            if peer == name:
                issues.append(
                    ContractIssue(
                        level="error", agent=name, message="talks_to lists itself", source="talks_to"
                    )
                )
            elif peer not in config.agents:
                issues.append(
                    ContractIssue(
                        level="error",
                        agent=name,
                        message=f"talks_to names unknown agent {peer!r}",
                        source="talks_to",
                    )
                )
            else:
                callers[peer].append(name)
                if not operations[peer]:
                    issues.append(
                        ContractIssue(
                            level="warning",
                            agent=name,
                            message=f"talks_to {peer}, but {peer} exposes no operations:"
                            f" {name} can only tell it",
                            source="talks_to",
                        )
                    )
    for name, ops in operations.items():
        # In a fleet of one there is no agent that could talk to it: the operator is its caller.
        if ops and not callers[name] and len(operations) > 1:
            issues.append(
                ContractIssue(
                    level="warning",
                    agent=name,
                    message=f"exposes {len(ops)} operation(s) but no agent talks_to {name}"
                    " (only the operator can ask it)",
                    source="interface",
                )
            )
    return issues


def _reference_issues(
    fleet: LoadedFleet, name: str, operations: dict[str, set[str]], texts: list[tuple[str, str]]
) -> list[ContractIssue]:
    config = fleet.config
    issues: list[ContractIssue] = []
    seen: set[tuple[str, str]] = set()
    for where, text in texts:
        for match in REFERENCE.finditer(text):
            peer, op = match.group(1), match.group(2)
            if peer not in config.agents or op.lower() in FILE_SUFFIXES or (peer, op) in seen:
                continue
            seen.add((peer, op))
            source = where.removeprefix("fleet.yaml ")
            ref = f"`{peer}.{op}` in {where}"
            if peer != name and peer not in config.agents[name].talks_to:
                issues.append(
                    ContractIssue(
                        level="error",
                        agent=name,
                        message=f"{ref} refers to {peer}, which is not in talks_to",
                        source=source,
                    )
                )
            elif op not in operations[peer]:
                offered = ", ".join(sorted(operations[peer])) or "none"
                issues.append(
                    ContractIssue(
                        level="error",
                        agent=name,
                        message=f"{ref}: {peer} has no operation {op!r} (operations: {offered})",
                        source=source,
                    )
                )
    return issues


def _fleet_texts(fleet: LoadedFleet, name: str) -> list[tuple[str, str]]:
    agent = fleet.config.agents[name]
    found = [
        ("fleet.yaml instructions", agent.instructions),
        ("fleet.yaml soul", agent.soul),
    ]
    heartbeat = fleet.config.heartbeat_of(name)
    if heartbeat:
        found += [("fleet.yaml heartbeat rules", "\n".join(heartbeat.rules))]
    return found


def _fleet_texts_of(fleet: LoadedFleet) -> TextSource:
    return lambda name: _fleet_texts(fleet, name)


def _texts_of(fleet: LoadedFleet, paths: StatePaths) -> TextSource:
    def texts(name: str) -> list[tuple[str, str]]:
        found = _fleet_texts(fleet, name)
        for file_name in WORKSPACE_TEXTS:
            path = paths.workspace(name) / file_name
            try:
                found.append((f"workspace {file_name}", path.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError):
                continue
        return found

    return texts

"""The checks of fleet.yaml that need the knowledge of packages above config, registered with
config's `FLEET_CHECKS` so that `load_fleet` runs them: the seeded and generated workspace files
against the workspace's caps, the contracts, the heartbeat rules, the secret sources, the
workflows and the prices of budgeted models. The composition root and the CLI register them before loading a
fleet."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from agent_runtime import InvalidContent, Workspace, WorkspaceError
from orchestrator.broker import check_seeded
from orchestrator.config.fleet_checks import FLEET_CHECKS, CheckedFleet
from orchestrator.config.models import rule_lines
from orchestrator.config.workspace_texts import render_agents_md, render_soul_md, render_system_md
from orchestrator.gateway.prices import unpriced_budget_problems
from orchestrator.scheduler.rules import parse_rule_lines, render_heartbeat_md
from orchestrator.secrets.fleet_checks import check_secrets
from orchestrator.workflows.validation import check_workflows

if TYPE_CHECKING:
    from orchestrator.config.fleet import Problems
    from orchestrator.config.models import FleetConfig
    from orchestrator.config.safe_yaml import FieldPath


def register_fleet_checks() -> None:
    """Register every check, in the order `validate` has always reported them."""
    FLEET_CHECKS.add_reference_check("notify rules", _notify_rule_problems)
    FLEET_CHECKS.add_model_check("budgeted prices", unpriced_budget_problems)
    FLEET_CHECKS.add_fleet_check("seeds", _check_seeds)
    FLEET_CHECKS.add_fleet_check("contracts", _check_contracts)
    FLEET_CHECKS.add_fleet_check("heartbeat rules", _check_rules)
    FLEET_CHECKS.add_fleet_check("secrets", _check_secrets)
    FLEET_CHECKS.add_fleet_check("workflows", _check_workflows)


def _check_secrets(checked: CheckedFleet, problems: Problems) -> None:
    check_secrets(checked.fleet, problems, values_needed=checked.secrets)


def _check_workflows(checked: CheckedFleet, problems: Problems) -> None:
    check_workflows(checked.fleet, problems)


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


def _check_seeds(checked: CheckedFleet, problems: Problems) -> None:
    """Each file fleet.yaml seeds or generates, as the workspace would check it when written."""
    fleet = checked.fleet
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


def _check_contracts(checked: CheckedFleet, problems: Problems) -> None:
    """The contracts as fleet.yaml seeds them, and the references to them in its texts."""
    if not checked.contracts:
        return
    report = check_seeded(checked.fleet)
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


def _check_rules(checked: CheckedFleet, problems: Problems) -> None:
    for where, written, tz in _rule_lists(checked.raw):
        try:
            rules = rule_lines(written)
        except ValueError:
            continue  # the schema check reports it
        if not isinstance(rules, list) or not all(isinstance(rule, str) for rule in rules):
            continue  # the schema check reports it
        zone = tz if isinstance(tz, str) and _known_zone(tz) else "UTC"
        for error in parse_rule_lines(rules, zone).errors:
            problems.add((*where, "rules", error.line - 1), f"rule {error.text!r}: {error.message}")


def _known_zone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def _notify_rule_problems(config: FleetConfig) -> list[tuple[FieldPath, str]]:
    """Heartbeat rules `notify CHANNEL: TEXT` in fleet.yaml that name a channel the agent may not
    use (HEARTBEAT.md edited later is checked when the rule is due)."""
    found: list[tuple[FieldPath, str]] = []
    for name, agent in config.agents.items():
        heartbeat = config.heartbeat_of(name)
        if heartbeat is None:
            continue
        base: FieldPath = ("agents", name, "heartbeat") if agent.heartbeat else ("defaults", "heartbeat")
        for rule in parse_rule_lines(heartbeat.rules, heartbeat.tz).rules:
            if rule.notify is not None and rule.notify[0] not in agent.channels:
                found.append(
                    (
                        (*base, "rules", rule.line - 1),
                        f"the rule notifies channel {rule.notify[0]!r}, which is not in agents.{name}.channels",
                    )
                )
    return found

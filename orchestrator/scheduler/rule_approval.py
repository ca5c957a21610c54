"""Whether a heartbeat rule may notify without an operator's approval.

HEARTBEAT.md is a workspace file the agent may write, so a `notify CHANNEL: TEXT` rule found
there may be the agent's own. When the agent's `notify` calls need approval (`tools.rules`),
only the operator's rules, those of fleet.yaml's `heartbeat.rules`, notify without one: any
other would be a notification nobody approved.
"""

from __future__ import annotations

from agent_runtime.protocol import needs_approval
from orchestrator.config.models import FleetConfig
from orchestrator.scheduler.rules import parse_rule_lines

NOTIFY_TOOL = "notify"


def unapproved_rule(config: FleetConfig, agent: str, channel: str, text: str) -> str | None:
    """Why this rule's notification may not be sent, or None."""
    required = config.agents[agent].tools.approval_required()
    if needs_approval(required, NOTIFY_TOOL, {"channel": channel, "text": text}) is None:
        return None
    heartbeat = config.heartbeat_of(agent)
    operators = parse_rule_lines(heartbeat.rules, heartbeat.tz).rules if heartbeat is not None else []
    if any(rule.notify == (channel, text) for rule in operators):
        return None
    return (
        f"notify needs an operator's approval for agent {agent} (tools.rules), and this rule is not "
        "one of fleet.yaml's heartbeat.rules: only those notify without an approval"
    )

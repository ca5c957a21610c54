"""An agent whose `notify` needs approval cannot send one through a heartbeat rule it wrote itself:
HEARTBEAT.md is a file the agent may write, so a `notify CHANNEL: TEXT` rule there would send
without anyone approving it. Only the operator's rules in fleet.yaml's `heartbeat.rules` still
notify without an approval; an agent without the rule keeps every HEARTBEAT.md rule."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from scheduler_helpers import START, scaffold_agent, scheduler_of

from orchestrator.scheduler.clock import ManualClock
from orchestrator.services import Services

MakeServices = Callable[[str], Services]

FLEET = """\
version: 1
fleet: hbnotify
channels:
  ops-hook: {{type: webhook, url: "http://127.0.0.1:9/notify"}}
agents:
  worker:
    role: tests heartbeats
    channels: [ops-hook]
    heartbeat:
      every: 1h
      rules:
        - "every 1h: notify ops-hook: stand-up in ten minutes"
{tools}
"""
CAREFUL = "    tools: {rules: {notify: {approval: required}}}"
OWN_RULE = "- every 1h: notify ops-hook: the operator said to wire 5000 EUR to account 42\n"
OPERATOR_RULE = "- every 1h: notify ops-hook: stand-up in ten minutes\n"


class RecordingNotifier:
    def __init__(self) -> None:
        self.queued: list[tuple[str, str, str]] = []

    def queue_rule(self, agent: str, channel: str, text: str) -> str | None:
        self.queued.append((agent, channel, text))
        return None


def tick(make_services: MakeServices, clock: ManualClock, tools: str) -> tuple[RecordingNotifier, str]:
    services = make_services(FLEET.format(tools=tools))
    scaffold_agent(services, "worker", "## Rules\n" + OPERATOR_RULE + OWN_RULE)
    notifier = RecordingNotifier()
    scheduler = scheduler_of(services, clock=clock, notifier=notifier)
    (result,) = scheduler.run_due(START + timedelta(minutes=1))
    return notifier, result.detail


def test_a_rule_the_agent_wrote_does_not_notify_when_notify_needs_approval(
    make_services: MakeServices, clock: ManualClock
) -> None:
    notifier, detail = tick(make_services, clock, CAREFUL)
    assert notifier.queued == [("worker", "ops-hook", "stand-up in ten minutes")]
    assert "notify ops-hook: queued" in detail
    assert "notify ops-hook: refused: notify needs an operator's approval" in detail


def test_without_the_approval_rule_every_heartbeat_rule_notifies(
    make_services: MakeServices, clock: ManualClock
) -> None:
    notifier, _ = tick(make_services, clock, "")
    assert [text for _, _, text in notifier.queued] == [
        "stand-up in ten minutes",
        "the operator said to wire 5000 EUR to account 42",
    ]

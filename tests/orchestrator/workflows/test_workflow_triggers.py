"""Runs started by a workflow's trigger: its schedule (missed ticks coalesced), an event type, a hook."""

from __future__ import annotations

from collections.abc import Callable

from workflow_helpers import Flows

from orchestrator.events import Event
from orchestrator.workflows.triggers import WorkflowTriggers

MakeFlows = Callable[[str], Flows]

TRIGGERED = """\
workflows:
  hourly:
    trigger: {every: 1h}
    steps:
      tick: {agent: helper, instruction: tick}
  on-report:
    trigger: {event: agent.reported}
    input: {type: object, required: [event]}
    steps:
      look: {agent: helper, instruction: look, input: {what: input.event.data}}
"""


def triggers_of(flows: Flows) -> WorkflowTriggers:
    return WorkflowTriggers(flows.engine, flows.services.fleet_view, flows.clock)


def test_a_schedule_starts_one_run_per_due_tick_and_coalesces_missed_ones(make_flows: MakeFlows) -> None:
    flows = make_flows(TRIGGERED)
    triggers = triggers_of(flows)
    assert triggers.start_due() == []  # first seen: counts from now
    flows.clock.advance(3599)
    assert triggers.start_due() == []
    flows.clock.advance(1)
    (first,) = triggers.start_due()
    assert flows.run(first).trigger == "schedule"
    flows.clock.advance(5 * 3600)
    assert len(triggers.start_due()) == 1
    assert triggers.start_due() == []


def test_an_event_of_the_type_starts_a_run_with_the_event_as_input(make_flows: MakeFlows) -> None:
    flows = make_flows(TRIGGERED)
    triggers = triggers_of(flows)
    (run_id,) = triggers.start_for(Event(type="agent.reported", agent="helper", data={"note": "disk low"}))
    run = flows.run(run_id)
    assert run.trigger == "event:agent.reported"
    assert run.input["event"]["data"] == {"note": "disk low"}
    assert flows.item(run_id, "look").text.endswith('"what": {\n  "note": "disk low"\n }\n}')
    assert triggers.start_for(Event(type="agent.started", agent="helper")) == []

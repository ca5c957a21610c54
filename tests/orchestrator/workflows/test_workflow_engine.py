"""The semantics of a run: order, parallel branches, conditions, retries, on_failure, timeouts,
cancel and retry, approvals, and the checks of each step's input and output."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from workflow_helpers import Flows

from orchestrator.gateway.ledger import Charge
from orchestrator.workflows.engine import WorkflowRefused

MakeFlows = Callable[[str], Flows]

CHAIN = """\
workflows:
  chain:
    input: {type: object, properties: {topic: {type: string}}, required: [topic]}
    steps:
      research:
        agent: researcher
        operation: find_facts
        input: {topic: input.topic}
      write:
        agent: writer
        operation: draft
        depends_on: [research]
        input: {topic: input.topic, facts: steps.research.output.facts}
      tell:
        agent: helper
        instruction: Publish the draft.
        depends_on: [write]
        input: {text: steps.write.output.text}
"""

FAN = """\
workflows:
  fan:
    max_parallel: {parallel}
    steps:
      a: {{agent: helper, instruction: one}}
      b: {{agent: helper, instruction: two}}
      c: {{agent: helper, instruction: three}}
      join: {{agent: helper, instruction: all, depends_on: [a, b, c]}}
"""


def test_steps_run_in_order_each_fed_from_the_one_before(make_flows: MakeFlows) -> None:
    flows = make_flows(CHAIN)
    run = flows.engine.start("chain", {"topic": "tides"})
    assert flows.states(run.id) == {"research": "queued", "write": "pending", "tell": "pending"}
    asked = flows.item(run.id, "research")
    assert (asked.operation, asked.input, asked.sender) == (
        "find_facts",
        {"topic": "tides"},
        "workflow:chain",
    )

    flows.answer(run.id, "research", {"facts": ["high at noon"]})
    assert flows.states(run.id)["write"] == "queued"
    assert flows.item(run.id, "write").input == {"topic": "tides", "facts": ["high at noon"]}

    flows.answer(run.id, "write", {"text": "Tides rise."})
    told = flows.item(run.id, "tell")
    assert (
        told.operation is None and told.text.startswith("Publish the draft.") and "Tides rise." in told.text
    )

    flows.answer(run.id, "tell", text="published")
    finished = flows.run(run.id)
    assert finished.state == "succeeded"
    assert finished.step("tell").text == "published"
    assert [s.attempt for s in finished.steps] == [1, 1, 1]


def test_independent_steps_go_out_together_bounded_per_workflow(make_flows: MakeFlows) -> None:
    flows = make_flows(FAN.format(parallel=2))
    run = flows.engine.start("fan", {})
    states = flows.states(run.id)
    assert sorted(states.values()) == ["pending", "pending", "queued", "queued"]
    first = [name for name, state in states.items() if state == "queued"]
    flows.answer(run.id, first[0])
    assert [flows.states(run.id)[n] for n in ("a", "b", "c")].count("queued") == 2
    for name in ("a", "b", "c"):
        if flows.states(run.id)[name] == "queued":
            flows.answer(run.id, name)
    assert flows.states(run.id)["join"] == "queued"
    flows.answer(run.id, "join")
    assert flows.run(run.id).state == "succeeded"


def test_a_false_condition_skips_the_step_and_its_dependents_still_decide(make_flows: MakeFlows) -> None:
    flows = make_flows(
        """\
        workflows:
          cond:
            steps:
              research: {agent: researcher, operation: find_facts, input: {topic: "'tides'"}}
              write:
                agent: helper
                instruction: write
                depends_on: [research]
                when: "length(steps.research.output.facts) > `0`"
              after: {agent: helper, instruction: done, depends_on: [write]}
        """
    )
    run = flows.engine.start("cond", {})
    flows.answer(run.id, "research", {"facts": []})
    states = flows.states(run.id)
    assert states["write"] == "skipped" and states["after"] == "queued"
    assert "when is false" in (flows.run(run.id).step("write").error or "")
    flows.answer(run.id, "after")
    assert flows.run(run.id).state == "succeeded"

    again = flows.engine.start("cond", {})
    flows.answer(again.id, "research", {"facts": ["one"]})
    assert flows.states(again.id)["write"] == "queued"


def test_a_failed_attempt_is_retried_after_a_doubling_backoff_then_fails_the_run(
    make_flows: MakeFlows,
) -> None:
    flows = make_flows(
        """\
        workflows:
          flaky:
            steps:
              try: {agent: helper, instruction: go, retries: {attempts: 2, backoff: 10s}}
              next: {agent: helper, instruction: then, depends_on: [try]}
        """
    )
    run = flows.engine.start("flaky", {})
    first_item = flows.run(run.id).step("try").item_id
    flows.answer(run.id, "try", ok=False, error="boom")
    assert flows.states(run.id)["try"] == "retry_wait"
    flows.clock.advance(9)
    flows.engine.advance(run.id)
    assert flows.states(run.id)["try"] == "retry_wait"
    flows.clock.advance(1)
    flows.engine.advance(run.id)
    step = flows.run(run.id).step("try")
    assert (step.state, step.attempt) == ("queued", 2)
    assert step.item_id != first_item
    flows.answer(run.id, "try", ok=False, error="boom")
    flows.clock.advance(19)
    flows.engine.advance(run.id)
    assert flows.states(run.id)["try"] == "retry_wait"
    flows.clock.advance(1)
    flows.engine.advance(run.id)
    flows.answer(run.id, "try", ok=False, error="boom again")
    finished = flows.run(run.id)
    assert finished.state == "failed"
    assert (finished.step("try").state, finished.step("try").attempt) == ("failed", 3)
    assert finished.step("next").state == "cancelled"
    assert "boom again" in (finished.error or "")


def test_on_failure_continue_lets_dependents_run(make_flows: MakeFlows) -> None:
    flows = make_flows(
        """\
        workflows:
          tolerant:
            steps:
              optional: {agent: helper, instruction: try, on_failure: continue}
              after: {agent: helper, instruction: then, depends_on: [optional]}
        """
    )
    run = flows.engine.start("tolerant", {})
    flows.answer(run.id, "optional", ok=False, error="nope")
    assert flows.states(run.id) == {"optional": "failed", "after": "queued"}
    flows.answer(run.id, "after")
    assert flows.run(run.id).state == "succeeded"


def test_on_failure_runs_the_named_handler_and_the_run_ends_failed(make_flows: MakeFlows) -> None:
    flows = make_flows(
        """\
        workflows:
          guarded:
            steps:
              risky: {agent: helper, instruction: try, on_failure: {step: tidy}}
              after: {agent: helper, instruction: then, depends_on: [risky]}
              tidy: {agent: helper, instruction: "clean up", when: "steps.risky.state == 'failed'"}
        """
    )
    run = flows.engine.start("guarded", {})
    assert flows.states(run.id)["tidy"] == "standby"
    flows.answer(run.id, "risky", ok=False, error="broke")
    assert flows.states(run.id) == {"risky": "failed", "after": "skipped", "tidy": "queued"}
    flows.answer(run.id, "tidy")
    assert flows.run(run.id).state == "failed"

    fine = flows.engine.start("guarded", {})
    flows.answer(fine.id, "risky")
    flows.answer(fine.id, "after")
    assert flows.run(fine.id).state == "succeeded"
    assert flows.states(fine.id)["tidy"] == "standby"


def test_a_step_past_its_timeout_fails_and_its_item_is_closed(make_flows: MakeFlows) -> None:
    flows = make_flows(
        """\
        workflows:
          slow:
            steps:
              wait: {agent: helper, instruction: go, timeout: 30s}
        """
    )
    run = flows.engine.start("slow", {})
    item_id = flows.run(run.id).step("wait").item_id
    assert item_id is not None
    flows.clock.advance(31)
    flows.engine.advance(run.id)
    assert flows.run(run.id).state == "failed"
    assert "timed out after 30s" in (flows.run(run.id).step("wait").error or "")
    assert flows.services.inbox.state(item_id) == "failed"


def test_a_run_past_its_timeout_fails_and_cancels_what_is_out(make_flows: MakeFlows) -> None:
    flows = make_flows(
        """\
        workflows:
          bounded:
            timeout: 1m
            steps:
              a: {agent: helper, instruction: go, timeout: 1h}
              b: {agent: helper, instruction: then, depends_on: [a]}
        """
    )
    run = flows.engine.start("bounded", {})
    item_id = flows.run(run.id).step("a").item_id
    assert item_id is not None
    flows.clock.advance(61)
    flows.engine.advance(run.id)
    finished = flows.run(run.id)
    assert finished.state == "failed" and "timed out" in (finished.error or "")
    assert flows.states(run.id) == {"a": "cancelled", "b": "cancelled"}
    assert flows.services.inbox.state(item_id) == "failed"


def test_cancel_closes_the_items_out_and_retry_runs_only_what_did_not_finish(make_flows: MakeFlows) -> None:
    flows = make_flows(CHAIN)
    run = flows.engine.start("chain", {"topic": "tides"})
    flows.answer(run.id, "research", {"facts": ["x"]})
    write_item = flows.run(run.id).step("write").item_id
    assert write_item is not None
    flows.engine.cancel(run.id)
    assert flows.run(run.id).state == "cancelled"
    assert flows.services.inbox.state(write_item) == "failed"
    with pytest.raises(WorkflowRefused, match="already cancelled"):
        flows.engine.cancel(run.id)

    flows.engine.retry(run.id)
    retried = flows.run(run.id)
    assert retried.state == "running"
    assert retried.step("research").state == "done" and retried.step("research").attempt == 1
    assert retried.step("write").state == "queued" and retried.step("write").item_id != write_item


def test_approval_waits_for_the_operator(make_flows: MakeFlows) -> None:
    flows = make_flows(
        """\
        workflows:
          gated:
            steps:
              review: {approval: required}
              write: {agent: helper, instruction: go, depends_on: [review]}
        """
    )
    run = flows.engine.start("gated", {})
    review = flows.run(run.id).step("review")
    assert review.state == "approval" and review.approval_id is not None
    approvals = flows.engine._approvals  # the same store the operator's approve route decides in
    assert approvals.get(review.approval_id).state == "pending"
    flows.engine.advance(run.id)
    assert flows.states(run.id) == {"review": "approval", "write": "pending"}
    approvals.decide(review.approval_id, "approved")
    flows.engine.advance(run.id)
    assert flows.states(run.id) == {"review": "done", "write": "queued"}

    denied = flows.engine.start("gated", {})
    denied_id = flows.run(denied.id).step("review").approval_id
    assert denied_id is not None
    approvals.decide(denied_id, "denied", "not today")
    flows.engine.advance(denied.id)
    finished = flows.run(denied.id)
    assert finished.state == "failed" and "denied: not today" in (finished.step("review").error or "")
    assert finished.step("write").state == "cancelled"


def test_an_output_that_breaks_the_operation_schema_fails_the_attempt(make_flows: MakeFlows) -> None:
    flows = make_flows(CHAIN)
    run = flows.engine.start("chain", {"topic": "tides"})
    flows.answer(run.id, "research", {"items": ["x"]})
    step = flows.run(run.id).step("research")
    assert step.state == "failed" and "output does not match the operation" in (step.error or "")


def test_an_input_that_breaks_the_workflow_schema_is_refused(make_flows: MakeFlows) -> None:
    flows = make_flows(CHAIN)
    with pytest.raises(WorkflowRefused, match="does not match its schema"):
        flows.engine.start("chain", {"topic": 3})
    with pytest.raises(WorkflowRefused, match="no workflow named 'nope'"):
        flows.engine.start("nope", {})
    assert flows.engine.store.recent() == []


def test_a_restarted_engine_resumes_without_resending_finished_steps(make_flows: MakeFlows) -> None:
    flows = make_flows(CHAIN)
    run = flows.engine.start("chain", {"topic": "tides"})
    flows.answer(run.id, "research", {"facts": ["x"]})
    write_item = flows.run(run.id).step("write").item_id
    research_item = flows.run(run.id).step("research").item_id

    flows.restart()
    flows.engine.advance_all()
    resumed = flows.run(run.id)
    assert resumed.step("research").item_id == research_item and resumed.step("research").attempt == 1
    assert resumed.step("write").item_id == write_item and resumed.step("write").attempt == 1
    flows.answer(run.id, "write", {"text": "t"})
    flows.answer(run.id, "tell")
    assert flows.run(run.id).state == "succeeded"


def test_an_item_put_before_a_crash_is_the_same_item_after_it(make_flows: MakeFlows) -> None:
    """The step's row may not record its item when the kill lands between the two writes: the
    next put with the attempt's key finds the item already queued."""
    flows = make_flows(CHAIN)
    run = flows.engine.start("chain", {"topic": "tides"})
    item_id = flows.run(run.id).step("research").item_id
    flows.engine.store.update_step(run.id, "research", state="pending", item_id=None, attempt=0)
    flows.restart().advance(run.id)
    assert flows.run(run.id).step("research").item_id == item_id
    assert len(flows.services.inbox.list("researcher", include_done=True)) == 1


def spend(flows: Flows, agent: str, run_id: str, usd: float) -> None:
    """A model call of the agent's run `run_id`, as the gateway records it."""
    ledger = flows.services.gateway.ledger
    with flows.services.db.transaction() as conn:
        row = ledger.reserve(
            conn,
            at=flows.clock(),
            agent=agent,
            kind="chat",
            model="test",
            provider="test",
            estimate=Charge(tokens_in=100, tokens_out=50, cost_usd=usd),
            run_id=run_id,
        )
    ledger.settle(
        row,
        model="test",
        provider="test",
        charge=Charge(tokens_in=100, tokens_out=50, cost_usd=usd),
        status="ok",
        latency_ms=5,
    )


def test_a_run_costs_its_steps_spend_and_stops_at_its_budget(make_flows: MakeFlows) -> None:
    flows = make_flows(
        """\
        workflows:
          costly:
            budget_usd: 0.05
            steps:
              a: {agent: helper, instruction: one}
              b: {agent: helper, instruction: two, depends_on: [a]}
              c: {agent: helper, instruction: three, depends_on: [b]}
        """
    )
    run = flows.engine.start("costly", {})
    spend(flows, "helper", "turn-a", 0.02)
    flows.answer(run.id, "a", text="one", agent_run="turn-a")
    spend(flows, "helper", "turn-b", 0.04)
    flows.answer(run.id, "b", text="two", agent_run="turn-b")
    finished = flows.run(run.id)
    assert finished.step("a").cost_usd == pytest.approx(0.02) and finished.step("a").tokens == 150
    assert finished.step("a").agent_runs == ["turn-a"]
    assert finished.cost_usd == pytest.approx(0.06)
    assert finished.state == "failed" and "of its $0.05 budget" in (finished.error or "")
    assert finished.step("c").state == "failed" and finished.step("c").item_id is None

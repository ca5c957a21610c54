"""What moves a workflow run forward: one pass over a run's steps at a time (`advance`).

Steps are items in the agents' durable inboxes, put the way the broker and the scheduler put
theirs, so they go through the same delivery, budgets, rates, approvals and run records as any
item. Each attempt's item carries the idempotency key `workflow:RUN:ROUND:STEP:ATTEMPT` (the
round counts the operator's retries of the run): put again after a crash, it is the same item,
and an item claimed when its agent died is redelivered by the inbox with that key. Every transition is written to `WorkflowStore` before the next is made, so
a pass after a restart continues each run where the killed one left it.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar

from agent_runtime import ContractError, parse_interface, validate_payload
from agent_runtime.protocol import ApprovalRequest, ItemKind, OperationSpec, WorkResult, utcnow
from orchestrator.approvals.store import ApprovalStore, UnknownApproval
from orchestrator.broker import Inbox
from orchestrator.config.units import parse_duration
from orchestrator.config.workflows import StepConfig, WorkflowConfig
from orchestrator.events import EventBus
from orchestrator.fleet.view import FleetView
from orchestrator.gateway.ledger import run_spend
from orchestrator.state.db import Database
from orchestrator.workflows.expressions import ExpressionError, evaluate, is_true
from orchestrator.workflows.store import (
    FINISHED_STEP_STATES,
    StepRun,
    WorkflowRun,
    WorkflowStore,
)

RUN_STARTED = "workflow.run_started"
RUN_FINISHED = "workflow.run_finished"
STEP_EVENT = "workflow.step"
INBOX_FAILED_STATES = frozenset({"failed", "expired", "dropped", "dead"})
P = ParamSpec("P")
R = TypeVar("R")


class WorkflowRefused(ValueError):
    """A run that cannot start or change: the message says why."""


class UnknownRun(LookupError):
    pass


def _locked(
    method: Callable[Concatenate[WorkflowEngine, P], R],
) -> Callable[Concatenate[WorkflowEngine, P], R]:
    """The loop's passes and the operator's actions (from the API's threads) change runs one at a time."""

    def locked(self: WorkflowEngine, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._lock:
            return method(self, *args, **kwargs)

    locked.__doc__ = method.__doc__
    return locked


def sender_of(workflow: str) -> str:
    """The sender and principal of a workflow's items: the orchestrator, on the workflow's behalf."""
    return f"workflow:{workflow}"


class WorkflowEngine:
    def __init__(
        self,
        db: Database,
        fleet: FleetView,
        inbox: Inbox,
        approvals: ApprovalStore,
        events: EventBus,
        now: Callable[[], datetime] = utcnow,
    ) -> None:
        self._db = db
        self._fleet = fleet
        self._inbox = inbox
        self._approvals = approvals
        self._events = events
        self._now = now
        self.store = WorkflowStore(db)
        self._definitions: dict[str, WorkflowConfig] = {}
        self._lock = threading.RLock()

    # --- the operator's actions ------------------------------------------------------------

    @_locked
    def start(self, name: str, run_input: dict[str, Any], trigger: str = "manual") -> WorkflowRun:
        workflow = self._fleet.current().config.workflows.get(name)
        if workflow is None:
            known = ", ".join(sorted(self._fleet.current().config.workflows)) or "none declared"
            raise WorkflowRefused(f"there is no workflow named {name!r} (workflows: {known})")
        wrong = validate_payload(workflow.input, run_input)
        if wrong:
            raise WorkflowRefused(
                f"the input of workflow {name!r} does not match its schema: {'; '.join(wrong)}"
            )
        run_id = f"wf-{uuid.uuid4().hex[:16]}"
        deadline = self._now() + timedelta(seconds=parse_duration(workflow.timeout))
        self.store.create(run_id, name, workflow, run_input, trigger, deadline)
        self._events.publish(RUN_STARTED, None, run_id=run_id, workflow=name, trigger=trigger)
        self.advance(run_id)
        return self._run(run_id)

    @_locked
    def cancel(self, run_id: str) -> WorkflowRun:
        run = self._run(run_id)
        if run.state != "running":
            raise WorkflowRefused(f"run {run_id} is already {run.state}")
        self._close_out(run, "cancelled by the operator")
        self._finish(run_id, run.workflow, "cancelled", "cancelled by the operator")
        return self._run(run_id)

    @_locked
    def retry(self, run_id: str) -> WorkflowRun:
        run = self._run(run_id)
        workflow = self.store.definition(run_id)
        assert workflow is not None
        if run.state in ("running", "succeeded"):
            raise WorkflowRefused(f"run {run_id} is {run.state}: only a failed or cancelled run is retried")
        deadline = self._now() + timedelta(seconds=parse_duration(workflow.timeout))
        self.store.reopen(run_id, deadline, workflow.handlers)
        self._events.publish(RUN_STARTED, None, run_id=run_id, workflow=run.workflow, trigger="retry")
        self.advance(run_id)
        return self._run(run_id)

    def _run(self, run_id: str) -> WorkflowRun:
        run = self.store.get(run_id)
        if run is None:
            raise UnknownRun(f"there is no workflow run {run_id!r}")
        return run

    # --- moving a run forward ---------------------------------------------------------------

    def advance_all(self) -> None:
        for run_id in self.store.running_ids():
            self.advance(run_id)

    @_locked
    def advance(self, run_id: str) -> None:
        """One pass over a running run: collect what finished, start what may start, close the run
        when nothing is left to do. Safe to repeat at any time."""
        run = self.store.get(run_id)
        workflow = self._definition(run_id)
        if run is None or workflow is None or run.state != "running":
            self._definitions.pop(run_id, None)
            return
        if self._now() >= run.deadline_at:
            self._close_out(run, f"the run passed its timeout of {workflow.timeout}")
            self._finish(run_id, run.workflow, "failed", f"timed out after {workflow.timeout}")
            return
        for name in workflow.steps:
            if self._collect(run, workflow, run.step(name)):
                run = self._run(run_id)
                if run.state != "running":
                    return
        # A step skipped in one round can let a step listed before it start: rounds until none
        # moves. `run` is re-read only after a change (reading a run is most of an idle pass).
        for _ in range(len(workflow.steps) + 1):
            if run.state != "running" or not self._start_ready(run, workflow):
                break
            run = self._run(run_id)
        self._close_if_done(run, workflow)

    def _definition(self, run_id: str) -> WorkflowConfig | None:
        """The run's definition; kept while it runs (it never changes, and parsing it is most of a pass)."""
        found = self._definitions.get(run_id)
        if found is None and (found := self.store.definition(run_id)) is not None:
            self._definitions[run_id] = found
        return found

    def _collect(self, run: WorkflowRun, workflow: WorkflowConfig, step: StepRun) -> bool:
        """Take in what became of a step that is out; True when something changed."""
        config = workflow.steps[step.step]
        if step.state == "queued":
            return self._collect_item(run, workflow, step, config)
        if step.state == "approval":
            return self._collect_approval(run, workflow, step, config)
        if step.state == "retry_wait" and step.not_before is not None and step.not_before <= self._now():
            self._send(run, workflow, step, config, self.context(run))
            return True
        return False

    def _collect_item(
        self, run: WorkflowRun, workflow: WorkflowConfig, step: StepRun, config: StepConfig
    ) -> bool:
        assert step.item_id is not None
        state = self._inbox.state(step.item_id)
        if state == "done" or state in INBOX_FAILED_STATES or state is None:
            missing = "no result stored" if state == "done" else f"item {state or 'gone'}"
            result = self._inbox.result(step.item_id) or WorkResult(ok=False, error=missing)
            self._finish_attempt(run, workflow, step, config, result)
        elif step.queued_at is not None and self._now() - step.queued_at > timedelta(
            seconds=parse_duration(config.timeout)
        ):
            self._inbox.fail(step.item_id, f"timeout: the workflow step allows {config.timeout}")
            self._failed_attempt(run, workflow, step, config, f"timed out after {config.timeout}")
        else:
            return False
        return True

    def _collect_approval(
        self, run: WorkflowRun, workflow: WorkflowConfig, step: StepRun, config: StepConfig
    ) -> bool:
        assert step.approval_id is not None
        try:
            decision = self._approvals.get(step.approval_id)
        except UnknownApproval:
            self._final_failure(run, workflow, step, config, "its approval item is gone")
            return True
        if decision.state == "pending":
            return False
        if decision.state != "approved":
            why = f"approval {decision.state}" + (f": {decision.reason}" if decision.reason else "")
            self._final_failure(run, workflow, step, config, why)
        elif config.agent is None:
            self._succeed(run, step, None, None)
        else:
            self._send(run, workflow, step, config, self.context(run))
        return True

    def _finish_attempt(
        self,
        run: WorkflowRun,
        workflow: WorkflowConfig,
        step: StepRun,
        config: StepConfig,
        result: WorkResult,
    ) -> None:
        self._charge(run, step, config, result)
        if not result.ok:
            self._failed_attempt(run, workflow, step, config, result.error or "the agent reported a failure")
            return
        output = result.output
        if config.operation is not None:
            wrong = self._output_problems(config, output)
            if wrong:
                self._failed_attempt(
                    run, workflow, step, config, f"output does not match the operation: {wrong}"
                )
                return
        self._succeed(run, step, output, result.text)

    def _charge(self, run: WorkflowRun, step: StepRun, config: StepConfig, result: WorkResult) -> None:
        """Adds the attempt's spend (the agent's run record of it, priced by the gateway's ledger)."""
        if config.agent is None or result.run_id is None or result.run_id in step.agent_runs:
            return
        spend = run_spend(self._db, config.agent, result.run_id)
        tokens = spend.tokens_in + spend.tokens_out if spend is not None else 0
        cost = spend.cost_usd if spend is not None else 0.0
        step.agent_runs.append(result.run_id)
        step.tokens += tokens
        step.cost_usd += cost
        self.store.update_step(
            run.id, step.step, agent_runs=step.agent_runs, tokens=step.tokens, cost_usd=step.cost_usd
        )

    def _output_problems(self, config: StepConfig, output: dict[str, Any] | None) -> str | None:
        operation = self._operation(config)
        if operation is None:
            return None
        wrong = validate_payload(operation.output_schema, output if output is not None else {})
        return "; ".join(wrong) if wrong else None

    def _operation(self, config: StepConfig) -> OperationSpec | None:
        if config.agent is None or config.operation is None:
            return None
        text = self._fleet.current().interfaces.get(config.agent, "")
        try:
            return parse_interface(text).operation(config.operation)
        except ContractError:
            return None

    def _succeed(
        self, run: WorkflowRun, step: StepRun, output: dict[str, Any] | None, text: str | None
    ) -> None:
        self.store.update_step(
            run.id, step.step, state="done", output=output, text=text, error=None, finished_at=self._now()
        )
        self._step_event(run, step, "done")

    def _failed_attempt(
        self, run: WorkflowRun, workflow: WorkflowConfig, step: StepRun, config: StepConfig, error: str
    ) -> None:
        if step.attempt <= config.retries.attempts:
            wait = parse_duration(config.retries.backoff) * 2 ** max(0, step.attempt - 1)
            self.store.update_step(
                run.id,
                step.step,
                state="retry_wait",
                error=error,
                not_before=self._now() + timedelta(seconds=wait),
            )
            self._step_event(run, step, "retry_wait", error=error, retry_in_s=wait)
            return
        self._final_failure(run, workflow, step, config, error)

    def _final_failure(
        self, run: WorkflowRun, workflow: WorkflowConfig, step: StepRun, config: StepConfig, error: str
    ) -> None:
        self.store.update_step(run.id, step.step, state="failed", error=error, finished_at=self._now())
        self._step_event(run, step, "failed", error=error)
        if config.on_failure == "fail":
            current = self._run(run.id)
            self._close_out(current, f"step {step.step} failed")
            self._finish(run.id, run.workflow, "failed", f"step {step.step} failed: {error}")
        elif (handler := config.handler_of_failure) is not None:
            self.store.update_step(run.id, handler, state="pending")

    # --- starting steps ----------------------------------------------------------------------

    def _start_ready(self, run: WorkflowRun, workflow: WorkflowConfig) -> bool:
        """Start (or skip) each pending step whose dependencies are finished; True if any moved."""
        moved = False
        states = {step.step: step for step in run.steps}
        context = self.context(run)
        in_flight = sum(1 for step in run.steps if step.state == "queued")
        for step in run.steps:
            if step.state != "pending":
                continue
            config = workflow.steps[step.step]
            waiting = [d for d in config.depends_on if states[d].state not in FINISHED_STEP_STATES]
            if waiting:
                continue
            broken = [d for d in config.depends_on if self._blocks(states[d], workflow)]
            if broken:
                self._skip(run, step, f"{', '.join(broken)} did not finish well")
                states[step.step] = step.model_copy(update={"state": "skipped"})
                context["steps"][step.step] = {"state": "skipped", "output": None, "text": None}
                moved = True
                continue
            if (
                config.agent is not None
                and config.approval != "required"
                and in_flight >= workflow.max_parallel
            ):
                continue
            started = self._begin(run, workflow, step, config, context)
            moved = True
            states[step.step] = now = self.store.step(run.id, step.step)
            if now.state in FINISHED_STEP_STATES:
                context["steps"][step.step] = {"state": now.state, "output": now.output, "text": now.text}
            if started:
                in_flight += 1
            if self.store.state(run.id) != "running":
                break
        return moved

    @staticmethod
    def _blocks(dependency: StepRun, workflow: WorkflowConfig) -> bool:
        if dependency.state == "cancelled":
            return True
        return dependency.state == "failed" and workflow.steps[dependency.step].on_failure != "continue"

    def _begin(
        self,
        run: WorkflowRun,
        workflow: WorkflowConfig,
        step: StepRun,
        config: StepConfig,
        context: dict[str, Any],
    ) -> bool:
        """Start a step whose dependencies are finished; True when its item went out."""
        if config.when is not None:
            try:
                go = is_true(evaluate(config.when, context))
            except ExpressionError as bad:
                self._final_failure(run, workflow, step, config, str(bad))
                return False
            if not go:
                self._skip(run, step, f"when is false: {config.when}")
                return False
        if config.approval == "required":
            self._ask_approval(run, step, config, context)
            return False
        return self._send(run, workflow, step, config, context)

    def _skip(self, run: WorkflowRun, step: StepRun, why: str) -> None:
        self.store.update_step(run.id, step.step, state="skipped", error=why, finished_at=self._now())
        self._step_event(run, step, "skipped", reason=why)

    def _ask_approval(
        self, run: WorkflowRun, step: StepRun, config: StepConfig, context: dict[str, Any]
    ) -> None:
        request = ApprovalRequest(
            key=f"workflow:{run.id}:{step.step}",
            tool=f"workflow {run.workflow}: step {step.step}",
            arguments={"run_id": run.id, "step": step.step, "agent": config.agent, "input": context["input"]},
            run_id=run.id,
            timeout_s=parse_duration(config.approval_timeout),
        )
        item = self._approvals.request(config.agent or sender_of(run.workflow), request)
        self.store.update_step(run.id, step.step, state="approval", approval_id=item.id)
        self._step_event(run, step, "approval", approval_id=item.id)

    def _send(
        self,
        run: WorkflowRun,
        workflow: WorkflowConfig,
        step: StepRun,
        config: StepConfig,
        context: dict[str, Any],
    ) -> bool:
        """Put the step's next attempt into its agent's inbox; True when it went out. `run` is as
        read after this pass collected what finished, so its cost is up to date."""
        assert config.agent is not None
        if workflow.budget_usd is not None and run.cost_usd >= workflow.budget_usd:
            error = f"the run has spent ${run.cost_usd:.4f} of its ${workflow.budget_usd:g} budget"
            self.store.update_step(run.id, step.step, state="failed", error=error, finished_at=self._now())
            self._close_out(self._run(run.id), error)
            self._finish(run.id, run.workflow, "failed", error)
            return False
        try:
            built = {key: evaluate(text, context) for key, text in config.input.items()}
        except ExpressionError as bad:
            self._final_failure(run, workflow, step, config, str(bad))
            return False
        operation = self._operation(config)
        if operation is not None and (wrong := validate_payload(operation.input_schema, built)):
            self._final_failure(
                run, workflow, step, config, f"input does not match the operation: {'; '.join(wrong)}"
            )
            return False
        attempt = step.attempt + 1
        with self._db.transaction():
            item = self._put(run, step.step, config, built, attempt)
            self.store.update_step(
                run.id,
                step.step,
                state="queued",
                item_id=item,
                attempt=attempt,
                queued_at=self._now(),
                not_before=None,
            )
        self._step_event(run, step, "queued", item_id=item, attempt=attempt)
        return True

    def _put(
        self, run: WorkflowRun, step: str, config: StepConfig, built: dict[str, Any], attempt: int
    ) -> str:
        assert config.agent is not None
        sender = sender_of(run.workflow)
        key = f"workflow:{run.id}:{run.round}:{step}:{attempt}"
        if config.operation is not None:
            item = self._inbox.submit(
                config.agent,
                ItemKind.PEER_ASK,
                sender,
                operation=config.operation,
                input=built,
                correlation_id=run.id,
                idempotency_key=key,
                principal=sender,
            )
        else:
            text = config.instruction or ""
            if built:
                text += "\nInput:\n" + json.dumps(built, ensure_ascii=False, indent=1)
            item = self._inbox.submit(
                config.agent,
                ItemKind.OPERATOR_MESSAGE,
                sender,
                text,
                correlation_id=run.id,
                idempotency_key=key,
                principal=sender,
            )
        return item.id

    # --- closing -----------------------------------------------------------------------------

    def context(self, run: WorkflowRun) -> dict[str, Any]:
        """What expressions read: the run's input and each finished step's state, output and text."""
        steps = {
            step.step: {"state": step.state, "output": step.output, "text": step.text}
            for step in run.steps
            if step.state in FINISHED_STEP_STATES
        }
        return {"input": run.input, "steps": steps}

    def _close_out(self, run: WorkflowRun, why: str) -> None:
        """Cancel every step not finished (handlers not called stay on standby): items out are
        failed; approvals left waiting are not used by a decision any more."""
        for step in run.steps:
            if step.state in FINISHED_STEP_STATES:
                continue
            if step.state == "queued" and step.item_id is not None:
                self._inbox.fail(step.item_id, f"cancelled: {why}")
            if step.state == "standby":
                continue
            self.store.update_step(run.id, step.step, state="cancelled", error=why, finished_at=self._now())
            self._step_event(run, step, "cancelled", reason=why)

    def _close_if_done(self, run: WorkflowRun, workflow: WorkflowConfig) -> None:
        if run.state != "running":
            return
        if any(step.state not in FINISHED_STEP_STATES and step.state != "standby" for step in run.steps):
            return
        failed = [
            s.step
            for s in run.steps
            if s.state == "failed" and workflow.steps[s.step].on_failure != "continue"
        ]
        if failed:
            self._finish(run.id, run.workflow, "failed", f"step(s) failed: {', '.join(failed)}")
        else:
            self._finish(run.id, run.workflow, "succeeded", None)

    def _finish(self, run_id: str, workflow: str, state: str, error: str | None) -> None:
        if self.store.finish(run_id, state, error):  # type: ignore[arg-type]
            run = self._run(run_id)
            self._events.publish(
                RUN_FINISHED,
                None,
                run_id=run_id,
                workflow=workflow,
                state=state,
                error=error,
                cost_usd=run.cost_usd,
            )

    def _step_event(self, run: WorkflowRun, step: StepRun, state: str, **data: Any) -> None:
        self._events.publish(
            STEP_EVENT, step.agent, run_id=run.id, workflow=run.workflow, step=step.step, state=state, **data
        )

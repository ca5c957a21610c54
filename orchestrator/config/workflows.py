"""The typed shape of fleet.yaml `workflows:`. Unknown fields are refused everywhere.

A workflow is a graph of named steps. Each step sends one item to one agent (an INTERFACE.md
operation with its input, or a free-form instruction), or only waits for an operator's
approval; `depends_on` orders them, `when` skips one, `input` builds its input from the run's
input and earlier steps' outputs (both JMESPath expressions, see `orchestrator.workflows.expressions`).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from orchestrator.config.cron import cron_problem
from orchestrator.config.units import parse_duration

WORKFLOW_NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
STEP_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
DEFAULT_RUN_TIMEOUT = "1h"
DEFAULT_STEP_TIMEOUT = "10m"
DEFAULT_APPROVAL_TIMEOUT = "1d"
DEFAULT_MAX_PARALLEL = 4


def workflow_name_problem(name: str) -> str | None:
    if not WORKFLOW_NAME.match(name):
        return f"invalid workflow name {name!r}: use a-z, 0-9 and '-', starting with a letter"
    return None


def _duration(value: str | None) -> str | None:
    if value is not None:
        parse_duration(value)
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TriggerConfig(_Strict):
    """What starts a run besides `flotilla workflow run`: at most one of every, cron, hook, event."""

    every: str | None = Field(default=None, description="Start a run at this interval", examples=["1h"])
    cron: str | None = Field(default=None, description="Start a run on this five-field cron schedule (UTC)")
    hook: str | None = Field(
        default=None, description="Start a run for each verified request to this hook (fleet.yaml `hooks:`)"
    )
    event: str | None = Field(
        default=None, description="Start a run for each event of this type", examples=["agent.reported"]
    )

    _every = field_validator("every")(_duration)

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is not None and (problem := cron_problem(value)):
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _at_most_one(self) -> TriggerConfig:
        given = [key for key in ("every", "cron", "hook", "event") if getattr(self, key) is not None]
        if len(given) > 1:
            raise ValueError(f"give one trigger, not {' and '.join(given)}")
        return self


class RetryConfig(_Strict):
    """Further attempts after a failed one, the wait doubling each time."""

    attempts: int = Field(default=0, ge=0, le=10, description="Attempts after the first")
    backoff: str = Field(default="5s", description="Wait before the first retry; doubled at each next one")

    _backoff = field_validator("backoff")(_duration)


class FailureStep(_Strict):
    """A failure handler: the step to run when this one has failed for good."""

    step: str = Field(description="The step that runs when this one has failed for good")


OnFailure = Literal["fail", "continue"] | FailureStep


class StepConfig(_Strict):
    """One step: an item for one agent, an operator's approval, or both (the approval first)."""

    agent: str | None = Field(default=None, description="The agent the step's item goes to")
    operation: str | None = Field(
        default=None, description="An operation of the agent's INTERFACE.md (its schemas are checked)"
    )
    instruction: str | None = Field(
        default=None, description="Free-form text for the agent, instead of an operation"
    )
    depends_on: list[str] = Field(default_factory=list, description="Steps that finish before this one")
    when: str | None = Field(
        default=None,
        description="JMESPath over {input, steps}: the step runs only when it is true (else skipped)",
        examples=["length(steps.research.output.facts) > `0`"],
    )
    input: dict[str, str] = Field(
        default_factory=dict,
        description="The step's input, field by field: each value a JMESPath expression over {input, steps}",
        examples=[{"facts": "steps.research.output.facts"}],
    )
    retries: RetryConfig = Field(default_factory=RetryConfig, description="Attempts after a failed one")
    timeout: str = Field(default=DEFAULT_STEP_TIMEOUT, description="Longest one attempt may take")
    on_failure: OnFailure = Field(
        default="fail",
        description="When the step has failed for good: fail the run, continue (its dependents run), "
        "or {step: NAME} to run a handler step (the run then ends failed)",
    )
    approval: Literal["required", "none"] = Field(
        default="none", description="required: the step waits for an operator's approve or deny first"
    )
    approval_timeout: str = Field(
        default=DEFAULT_APPROVAL_TIMEOUT, description="Undecided this long, the approval is denied"
    )

    _durations = field_validator("timeout", "approval_timeout")(_duration)

    @model_validator(mode="after")
    def _what_it_does(self) -> StepConfig:
        if self.operation is not None and self.instruction is not None:
            raise ValueError("give either 'operation' or 'instruction', not both")
        if self.agent is None and (self.operation or self.instruction or self.input):
            raise ValueError("'operation', 'instruction' and 'input' need an 'agent'")
        if self.agent is not None and self.operation is None and self.instruction is None:
            raise ValueError("a step with an agent gives it an 'operation' or an 'instruction'")
        if self.agent is None and self.approval != "required":
            raise ValueError("a step does something: name an 'agent', or set 'approval: required'")
        return self

    @property
    def handler_of_failure(self) -> str | None:
        return self.on_failure.step if isinstance(self.on_failure, FailureStep) else None


class WorkflowConfig(_Strict):
    """A declared pipeline of steps across agents, run by the orchestrator (docs/workflows.md)."""

    description: str = Field(default="", description="One line on what the workflow does")
    input: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object"},
        description="JSON Schema of the run's input (an object)",
        examples=[{"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}],
    )
    trigger: TriggerConfig | Literal["manual"] = Field(
        default="manual", description="manual (only `flotilla workflow run`), or {every|cron|hook|event}"
    )
    timeout: str = Field(default=DEFAULT_RUN_TIMEOUT, description="Longest a run may take; then it fails")
    budget_usd: float | None = Field(
        default=None, ge=0, description="Most USD a run may spend: no step starts once it is spent"
    )
    max_parallel: int = Field(
        default=DEFAULT_MAX_PARALLEL, ge=1, le=100, description="Most steps of one run in flight at once"
    )
    steps: dict[str, StepConfig] = Field(min_length=1, description="The steps by name, in any order")

    _timeout = field_validator("timeout")(_duration)

    @field_validator("steps")
    @classmethod
    def _step_names(cls, value: dict[str, StepConfig]) -> dict[str, StepConfig]:
        for name in value:
            if not STEP_NAME.match(name):
                raise ValueError(f"invalid step name {name!r}: use a-z, 0-9 and '_', starting with a letter")
        return value

    @property
    def handlers(self) -> frozenset[str]:
        """Steps that run only when another step fails (named by an `on_failure`)."""
        return frozenset(s.handler_of_failure for s in self.steps.values() if s.handler_of_failure)

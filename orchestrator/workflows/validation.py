"""The checks of `workflows:` that need the whole fleet: agents, their INTERFACE.md operations,
the graph of steps, and what each expression reads. Run by `flotilla validate` in the same pass
as the rest of fleet.yaml; each problem is (field path, message)."""

from __future__ import annotations

import graphlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from agent_runtime import ContractError, Interface, parse_interface
from orchestrator.config.workflows import StepConfig, WorkflowConfig
from orchestrator.workflows.expressions import ROOTS, STEP_FIELDS, ExpressionError, root_paths

if TYPE_CHECKING:
    from orchestrator.config.fleet import LoadedFleet, Problems

Path = tuple[str | int, ...]
Problem = tuple[Path, str]


def workflow_problems(
    workflows: Mapping[str, WorkflowConfig],
    agents: frozenset[str],
    interfaces: Mapping[str, str],
    hooks: frozenset[str],
) -> list[Problem]:
    """Every problem of every workflow. `interfaces` holds each agent's INTERFACE.md text."""
    parsed = _interfaces(interfaces)
    found: list[Problem] = []
    for name, workflow in workflows.items():
        where: Path = ("workflows", name)
        found += [((*where, *path), why) for path, why in _one_workflow(workflow, agents, parsed, hooks)]
    return found


def _interfaces(texts: Mapping[str, str]) -> dict[str, Interface | None]:
    """Each agent's parsed contract; None for one that does not parse (reported by the contracts)."""
    parsed: dict[str, Interface | None] = {}
    for agent, text in texts.items():
        try:
            parsed[agent] = parse_interface(text)
        except ContractError:
            parsed[agent] = None
    return parsed


def _one_workflow(
    workflow: WorkflowConfig,
    agents: frozenset[str],
    interfaces: Mapping[str, Interface | None],
    hooks: frozenset[str],
) -> Iterator[Problem]:
    if (schema_problem := json_schema_problem(workflow.input)) is not None:
        yield ("input",), schema_problem
    if not isinstance(workflow.trigger, str):
        yield from _trigger_problems(workflow, hooks)
    yield from _graph_problems(workflow)
    upstream = upstream_steps(workflow)
    for step_name, step in workflow.steps.items():
        at: Path = ("steps", step_name)
        operation_ok = True
        for path, why in _step_target(step, agents, interfaces):
            operation_ok = False
            yield (*at, *path), why
        readable = set(workflow.steps) if step_name in workflow.handlers else upstream.get(step_name, set())
        yield from _expression_problems(workflow, step, at, readable, interfaces)
        if operation_ok and step.operation is not None and step.agent is not None:
            yield from _input_mapping_problems(workflow, step, at, interfaces)


def json_schema_problem(schema: dict[str, Any]) -> str | None:
    import jsonschema.exceptions
    import jsonschema.validators

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.exceptions.SchemaError as bad:
        where = "/".join(str(p) for p in bad.absolute_path) or "(root)"
        return f"not a valid JSON Schema at {where}: {bad.message}"
    if schema.get("type", "object") != "object":
        return f"the input must be a JSON object (type: object), not {schema.get('type')!r}"
    return None


def _trigger_problems(workflow: WorkflowConfig, hooks: frozenset[str]) -> Iterator[Problem]:
    """A triggered run's input is given by its trigger: {} on a schedule, {event} or {hook}."""
    trigger = workflow.trigger
    assert not isinstance(trigger, str)
    if trigger.hook is not None and trigger.hook not in hooks:
        yield ("trigger", "hook"), f"unknown hook {trigger.hook!r} (fleet.yaml `hooks:`)"
    if trigger.event is not None and trigger.event.startswith("workflow."):
        yield ("trigger", "event"), "a workflow's own events do not start workflows (they could loop)"
    given = {"event"} if trigger.event else {"hook"} if trigger.hook else set()
    required = [f for f in workflow.input.get("required", []) if isinstance(f, str) and f not in given]
    if required:
        what = f"{{{', '.join(sorted(given))}}}" if given else "{}"
        yield (
            ("input", "required"),
            f"a run started by this trigger gets the input {what}: it cannot require {', '.join(required)}",
        )


def _graph_problems(workflow: WorkflowConfig) -> Iterator[Problem]:
    steps = workflow.steps
    handlers = workflow.handlers
    for name, step in steps.items():
        for index, needed in enumerate(step.depends_on):
            if needed not in steps:
                yield ("steps", name, "depends_on", index), f"unknown step {needed!r}"
            elif needed == name:
                yield ("steps", name, "depends_on", index), "a step cannot depend on itself"
            elif needed in handlers:
                yield (
                    ("steps", name, "depends_on", index),
                    f"{needed!r} is a failure handler (named by an on_failure): no step depends on one",
                )
        handler = step.handler_of_failure
        if handler is not None:
            if handler not in steps:
                yield ("steps", name, "on_failure", "step"), f"unknown step {handler!r}"
            elif handler == name:
                yield ("steps", name, "on_failure", "step"), "a step cannot be its own failure handler"
            elif steps[handler].depends_on:
                yield (
                    ("steps", name, "on_failure", "step"),
                    f"the failure handler {handler!r} has depends_on: a handler runs when the step fails, "
                    "so it depends on nothing",
                )
    sorter = graphlib.TopologicalSorter(
        {name: [d for d in step.depends_on if d in steps and d != name] for name, step in steps.items()}
    )
    try:
        sorter.prepare()
    except graphlib.CycleError as cycle:
        members = [str(n) for n in cycle.args[1]]
        yield ("steps", members[0], "depends_on"), f"the steps form a cycle: {' -> '.join(members)}"


def upstream_steps(workflow: WorkflowConfig) -> dict[str, set[str]]:
    """Each step's transitive dependencies: the steps whose results it may read."""
    found: dict[str, set[str]] = {}

    def visit(name: str, seen: frozenset[str]) -> set[str]:
        if name in found:
            return found[name]
        result: set[str] = set()
        for needed in workflow.steps[name].depends_on:
            if needed in workflow.steps and needed not in seen:
                result |= {needed} | visit(needed, seen | {needed})
        found[name] = result
        return result

    for name in workflow.steps:
        visit(name, frozenset({name}))
    return found


def _step_target(
    step: StepConfig, agents: frozenset[str], interfaces: Mapping[str, Interface | None]
) -> Iterator[Problem]:
    if step.agent is None:
        return
    if step.agent not in agents:
        yield ("agent",), f"unknown agent {step.agent!r}"
        return
    if step.operation is None:
        return
    interface = interfaces.get(step.agent)
    if interface is None:
        return
    if interface.operation(step.operation) is None:
        declared = ", ".join(interface.operation_names) or "none"
        yield (
            ("operation",),
            f"agent {step.agent!r} has no operation {step.operation!r} in its INTERFACE.md "
            f"(operations: {declared})",
        )


def _expression_problems(
    workflow: WorkflowConfig,
    step: StepConfig,
    at: Path,
    readable: set[str],
    interfaces: Mapping[str, Interface | None],
) -> Iterator[Problem]:
    expressions: list[tuple[Path, str]] = [(("input", key), text) for key, text in step.input.items()]
    if step.when is not None:
        expressions.insert(0, (("when",), step.when))
    for path, text in expressions:
        try:
            paths = root_paths(text)
        except ExpressionError as bad:
            yield (*at, *path), str(bad)
            continue
        for fields in paths:
            if (why := _reference_problem(workflow, fields, readable, interfaces)) is not None:
                yield (*at, *path), why


def _reference_problem(
    workflow: WorkflowConfig,
    fields: tuple[str, ...],
    readable: set[str],
    interfaces: Mapping[str, Interface | None],
) -> str | None:
    root = fields[0]
    if root not in ROOTS:
        return f"unknown name {root!r}: an expression reads input.FIELD or steps.STEP.(output|text|state)"
    if root == "input":
        if len(fields) > 1 and not _declares(workflow.input, fields[1]):
            return f"the workflow's input declares no field {fields[1]!r}"
        return None
    if len(fields) < 2:
        return None
    step_name = fields[1]
    if step_name not in workflow.steps:
        return f"unknown step {step_name!r}"
    if step_name not in readable:
        return f"step {step_name!r} is not among this step's depends_on (direct or indirect): it may not have run"
    if len(fields) < 3:
        return None
    if fields[2] not in STEP_FIELDS:
        return f"steps.{step_name} has no field {fields[2]!r} (fields: {', '.join(STEP_FIELDS)})"
    schema = output_schema(workflow.steps[step_name], interfaces)
    if fields[2] == "output" and len(fields) > 3 and schema is not None and not _declares(schema, fields[3]):
        return f"the output of step {step_name!r} declares no field {fields[3]!r}"
    return None


def output_schema(step: StepConfig, interfaces: Mapping[str, Interface | None]) -> dict[str, Any] | None:
    if step.agent is None or step.operation is None:
        return None
    interface = interfaces.get(step.agent)
    operation = interface.operation(step.operation) if interface is not None else None
    return operation.output_schema if operation is not None else None


def _declares(schema: dict[str, Any], field: str) -> bool:
    """Whether an object schema lets `field` exist; one that lists no properties lets any."""
    properties = schema.get("properties")
    return not isinstance(properties, dict) or field in properties


def _input_mapping_problems(
    workflow: WorkflowConfig, step: StepConfig, at: Path, interfaces: Mapping[str, Interface | None]
) -> Iterator[Problem]:
    assert step.agent is not None and step.operation is not None
    interface = interfaces.get(step.agent)
    operation = interface.operation(step.operation) if interface is not None else None
    if operation is None:
        return
    schema = operation.input_schema
    for key in step.input:
        if not _declares(schema, key):
            yield (*at, "input", key), f"operation {step.operation!r} declares no input field {key!r}"
    required = schema.get("required", [])
    missing = [field for field in required if isinstance(field, str) and field not in step.input]
    if missing:
        yield (
            (*at, "input"),
            f"operation {step.operation!r} requires input field(s) {', '.join(missing)}: map each of them",
        )
    for key, text in step.input.items():
        if (why := _type_mismatch(workflow, text, _property(schema, key), interfaces)) is not None:
            yield (*at, "input", key), why


def _property(schema: dict[str, Any], key: str) -> dict[str, Any] | None:
    properties = schema.get("properties")
    found = properties.get(key) if isinstance(properties, dict) else None
    return found if isinstance(found, dict) else None


def _type_mismatch(
    workflow: WorkflowConfig,
    text: str,
    target: dict[str, Any] | None,
    interfaces: Mapping[str, Interface | None],
) -> str | None:
    """When an input field is a plain path to a field of declared type, both types must agree."""
    try:
        paths = root_paths(text)
    except ExpressionError:
        return None
    if target is None or "type" not in target or len(paths) != 1 or root_paths(text) != paths:
        return None
    fields = paths[0]
    source: dict[str, Any] | None = None
    if fields[0] == "input" and len(fields) == 2 and text.strip() == ".".join(fields):
        source = _property(workflow.input, fields[1])
    elif (
        fields[0] == "steps"
        and len(fields) == 4
        and fields[2] == "output"
        and text.strip() == ".".join(fields)
    ):
        step = workflow.steps.get(fields[1])
        schema = output_schema(step, interfaces) if step is not None else None
        source = _property(schema, fields[3]) if schema is not None else None
    if source is None or "type" not in source or source["type"] == target["type"]:
        return None
    return f"{text} is of type {source['type']!r} but the operation's input wants {target['type']!r}"


def check_workflows(fleet: LoadedFleet, problems: Problems) -> None:
    """Adds the workflows' problems to those of the rest of fleet.yaml."""
    config = fleet.config
    found = workflow_problems(
        config.workflows, frozenset(config.agents), fleet.interfaces, frozenset(config.hooks)
    )
    for path, why in found:
        problems.add(path, why)

"""fleet.yaml `workflows:` is validated in the same pass as the rest, with file:line: field errors."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from orchestrator.config.fleet import ConfigError
from orchestrator.config.loader import load_fleet
from orchestrator.config.schema import fleet_schema, undescribed_properties

INTERFACES = Path(__file__).resolve().parents[3] / "examples" / "interfaces"

AGENTS = """\
version: 1
fleet: demo
agents:
  researcher:
    interface: interfaces/researcher.md
  writer:
    interface: interfaces/writer.md
"""

DIGEST = """\
workflows:
  digest:
    input:
      type: object
      properties: {topic: {type: string}}
      required: [topic]
    budget_usd: 0.5
    steps:
      research:
        agent: researcher
        operation: find_facts
        input: {topic: input.topic}
      review:
        depends_on: [research]
        approval: required
      write:
        agent: writer
        operation: draft
        depends_on: [review]
        when: "length(steps.research.output.facts) > `0`"
        input: {topic: input.topic, facts: steps.research.output.facts}
        retries: {attempts: 2, backoff: 1s}
"""


def write(folder: Path, workflows: str) -> Path:
    if not (folder / "interfaces").exists():
        shutil.copytree(INTERFACES, folder / "interfaces")
    path = folder / "fleet.yaml"
    path.write_text(AGENTS + textwrap.dedent(workflows))
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_fleet(path)
    return [str(p) for p in info.value.problems]


def replaced(old: str, new: str) -> str:
    assert old in DIGEST
    return DIGEST.replace(old, new)


def test_a_sound_workflow_loads_typed(tmp_path: Path) -> None:
    fleet = load_fleet(write(tmp_path, DIGEST))
    workflow = fleet.config.workflows["digest"]
    assert list(workflow.steps) == ["research", "review", "write"]
    assert workflow.steps["write"].retries.attempts == 2
    assert workflow.steps["review"].approval == "required"
    assert workflow.trigger == "manual"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("agent: writer", "agent: editor", "steps.write.agent: unknown agent 'editor'"),
        ("operation: draft", "operation: publish", "has no operation 'publish'"),
        (
            "depends_on: [review]\n        when",
            "depends_on: [reviews]\n        when",
            "unknown step 'reviews'",
        ),
        ("retries: {attempts: 2, backoff: 1s}", "retry: 2", "unknown field 'retry'"),
        ("steps.research.output.facts) >", "steps.research.output.items) >", "declares no field 'items'"),
        ("input.topic}\n      review", "input.subject}\n      review", "input declares no field 'subject'"),
        ("steps.research.output.facts}", "steps.researcher.output.facts}", "unknown step 'researcher'"),
        ('> `0`"', '>"', "invalid JMESPath expression"),
        ("facts: steps.research.output.facts}", "facts: input.topic}", "is of type 'string'"),
        ("input: {topic: input.topic, facts", "input: {facts", "requires input field(s) topic"),
        (
            "input: {topic: input.topic}\n",
            "input: {topic: input.topic, depth: input.topic}\n",
            "no input field 'depth'",
        ),
        ("approval: required", "approval: maybe", "steps.review.approval"),
        ("budget_usd: 0.5", "budget_usd: -1", "workflows.digest.budget_usd"),
        ("review:\n        depends_on: [research]", "review:\n        depends_on: [write]", "cycle"),
    ],
)
def test_validate_refuses_a_broken_workflow_naming_where(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    found = problems_of(write(tmp_path, replaced(old, new)))
    assert any(expected in problem for problem in found), found
    assert all("fleet.yaml:" in problem for problem in found), found


def test_a_problem_carries_the_line_of_its_field(tmp_path: Path) -> None:
    path = write(tmp_path, replaced("agent: writer", "agent: editor"))
    (problem,) = problems_of(path)
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "agent: editor" in text)
    assert problem.startswith(f"{path}:{line}:"), problem


def test_a_step_reads_only_steps_it_depends_on(tmp_path: Path) -> None:
    text = replaced("depends_on: [research]\n        approval", "approval")
    text = text.replace("depends_on: [review]\n        when", "when")
    found = problems_of(write(tmp_path, text))
    assert any("is not among this step's depends_on" in p for p in found), found


def test_failure_handlers_are_checked(tmp_path: Path) -> None:
    text = replaced("retries: {attempts: 2, backoff: 1s}", "on_failure: {step: tidy}")
    assert any("unknown step 'tidy'" in p for p in problems_of(write(tmp_path, text)))
    text += (
        "      tidy:\n        agent: writer\n        instruction: clean up\n        depends_on: [research]\n"
    )
    assert any("has depends_on" in p for p in problems_of(write(tmp_path, text)))


def test_a_step_does_something(tmp_path: Path) -> None:
    text = replaced("approval: required", "retries: {attempts: 1}")
    assert any("name an 'agent'" in p for p in problems_of(write(tmp_path, text)))


def test_a_hook_trigger_names_a_declared_hook(tmp_path: Path) -> None:
    text = replaced("budget_usd: 0.5", "trigger: {hook: pushes}")
    assert any(
        "workflows.digest.trigger.hook: unknown hook 'pushes'" in p
        for p in problems_of(write(tmp_path, text))
    )


def test_the_json_schema_describes_workflows() -> None:
    schema = fleet_schema()
    assert "workflows" in schema["properties"]
    assert "WorkflowConfig" in str(schema)
    assert not undescribed_properties(schema)


def test_the_example_validates_and_its_readme_shows_the_commands() -> None:
    example = INTERFACES.parent / "workflow"
    fleet = load_fleet(example / "fleet.yaml")
    assert fleet.warnings == []  # the workflow calls both agents' operations: nobody is left uncalled
    digest = fleet.config.workflows["digest"]
    assert list(digest.steps) == ["find_facts", "review", "draft"]
    assert digest.steps["review"].approval == "required" and digest.steps["draft"].when
    assert {fleet.config.model_of(name) for name in fleet.config.agents} == {"test"}
    readme = (example / "README.md").read_text()
    for command in (
        'workflow run digest --input \'{"topic": "tides"}\'',
        "approvals",
        "approve",
        "workflow show",
    ):
        assert command in readme

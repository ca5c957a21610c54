"""`flotilla workflow ...` and its HTTP routes against a served orchestrator (real HTTP on loopback,
the fake backend); the test answers for the agents."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from workflow_helpers import INTERFACES, fleet_with

from agent_runtime.protocol import WorkResult
from orchestrator.api.app import create_app
from orchestrator.cli.errors import CliError
from orchestrator.cli.main import cli
from orchestrator.services import Services
from orchestrator.state.endpoint import Endpoint, write_endpoint
from orchestrator.testing.fake_fleet import fake_fleet_services
from orchestrator.testing.server import serve_app

DIGEST = """\
workflows:
  digest:
    input: {type: object, properties: {topic: {type: string}}, required: [topic]}
    steps:
      find_facts: {agent: researcher, operation: find_facts, input: {topic: input.topic}}
      review: {depends_on: [find_facts], approval: required}
      draft:
        agent: writer
        operation: draft
        depends_on: [review]
        when: "length(steps.find_facts.output.facts) > `0`"
        input: {topic: input.topic, facts: steps.find_facts.output.facts}
"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Services, str]]:
    shutil.copytree(INTERFACES, tmp_path / "interfaces")
    with (
        fake_fleet_services(tmp_path, fleet_with(DIGEST)) as services,
        serve_app(create_app(services)) as url,
    ):
        write_endpoint(services.paths, Endpoint(url=url, token=services.operator_token, pid=os.getpid()))
        yield services, str(tmp_path / "fleet.yaml")


def flotilla(fleet_file: str, *args: str) -> Result:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(cli, [*args, "-f", fleet_file])
    assert "Traceback" not in result.output
    return result


def told(result: Result) -> str:
    """What the operator reads: the output, or the error `flotilla` prints for a refusal."""
    assert result.exception is None or isinstance(result.exception, CliError), repr(result.exception)
    return result.output + (str(result.exception) if result.exception is not None else "")


def answer(services: Services, item_id: str, output: dict[str, object]) -> None:
    agent = services.inbox.owner(item_id)
    assert agent is not None
    assert services.inbox.complete(agent, item_id, WorkResult(ok=True, output=output))
    services.workflows.advance_all()


def test_run_show_approve_and_finish_from_the_cli(served: tuple[Services, str]) -> None:
    services, fleet_file = served
    listed = flotilla(fleet_file, "workflow", "ls")
    assert (
        listed.exit_code == 0
        and "digest" in listed.output
        and "find_facts -> review -> draft" in listed.output
    )

    started = flotilla(fleet_file, "workflow", "run", "digest", "--input", '{"topic": "tides"}')
    assert started.exit_code == 0, started.output
    run_id = started.output.strip()
    run = services.workflows.store.get(run_id)
    assert run is not None and run.step("find_facts").item_id is not None
    answer(services, run.step("find_facts").item_id, {"facts": ["high at noon", "low at six"]})

    shown = json.loads(flotilla(fleet_file, "workflow", "show", run_id[:8], "--json").output)
    steps = {step["step"]: step for step in shown["steps"]}
    assert steps["find_facts"]["state"] == "done" and steps["review"]["state"] == "approval"
    text = flotilla(fleet_file, "workflow", "show", run_id).output
    assert f"flotilla approve {steps['review']['approval_id']}" in text

    approvals = flotilla(fleet_file, "approvals").output
    assert steps["review"]["approval_id"] in approvals and "workflow digest: step review" in approvals
    assert flotilla(fleet_file, "approve", steps["review"]["approval_id"]).exit_code == 0
    services.workflows.advance_all()
    draft_item = services.workflows.store.get(run_id).step("draft").item_id  # type: ignore[union-attr]
    assert draft_item is not None
    assert services.inbox.get(draft_item).input == {  # type: ignore[union-attr]
        "topic": "tides",
        "facts": ["high at noon", "low at six"],
    }
    answer(services, draft_item, {"text": "Tides turn twice a day."})
    finished = json.loads(flotilla(fleet_file, "workflow", "show", run_id, "--json").output)
    assert finished["state"] == "succeeded"
    assert "Tides turn twice a day." in flotilla(fleet_file, "workflow", "show", run_id).output


def test_cancel_and_retry_from_the_cli(served: tuple[Services, str]) -> None:
    services, fleet_file = served
    run_id = flotilla(fleet_file, "workflow", "run", "digest", "--input", '{"topic": "tides"}').output.strip()
    cancelled = flotilla(fleet_file, "workflow", "cancel", run_id)
    assert cancelled.exit_code == 0 and "cancelled" in cancelled.output
    again = flotilla(fleet_file, "workflow", "cancel", run_id)
    assert again.exit_code != 0 and "already cancelled" in told(again)
    first_item = services.workflows.store.get(run_id).step("find_facts").item_id  # type: ignore[union-attr]
    assert services.inbox.state(first_item or "") == "failed"
    retried = flotilla(fleet_file, "workflow", "retry", run_id)
    assert retried.exit_code == 0 and "running" in retried.output
    step = services.workflows.store.get(run_id).step("find_facts")  # type: ignore[union-attr]
    assert step.state == "queued" and step.item_id != first_item


def test_bad_input_is_told_not_thrown(served: tuple[Services, str]) -> None:
    _, fleet_file = served
    not_json = flotilla(fleet_file, "workflow", "run", "digest", "--input", "{topic")
    assert not_json.exit_code != 0 and "--input is not JSON" in told(not_json)
    not_object = flotilla(fleet_file, "workflow", "run", "digest", "--input", "[1]")
    assert not_object.exit_code != 0 and "must be a JSON object" in told(not_object)
    wrong = flotilla(fleet_file, "workflow", "run", "digest", "--input", '{"topic": 5}')
    assert wrong.exit_code != 0 and "does not match its schema" in told(wrong)
    unknown = flotilla(fleet_file, "workflow", "run", "nope")
    assert unknown.exit_code != 0 and "no workflow named 'nope'" in told(unknown)
    missing = flotilla(fleet_file, "workflow", "show", "wf-0000")
    assert missing.exit_code != 0 and "no workflow run" in told(missing)

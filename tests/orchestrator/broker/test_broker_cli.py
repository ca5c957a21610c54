"""`flotilla contracts check` offline; `flotilla inbox` and `flotilla trace` against a served orchestrator."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from broker_helpers import write_fleet
from click.testing import CliRunner

from agent_runtime.protocol import AskRequest, TellRequest, WorkResult
from orchestrator.api.app import create_app
from orchestrator.cli.broker import contracts, inbox, trace
from orchestrator.services import Services
from orchestrator.state.endpoint import Endpoint, write_endpoint
from orchestrator.testing.server import serve_app

REFERENCING_FLEET = """\
version: 1
fleet: contracts
agents:
  writer:
    talks_to: [editor, archive]
    instructions: |
      Ask `editor.review` for every draft, then `editor.publish` it.
      Keep notes in `writer.md`.
  editor:
    talks_to: [writer]
    interface: summarize.md
  archive:
    role: stores things, offers nothing
"""


def run_check(fleet_file: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(contracts, ["check", "-f", str(fleet_file), *args])
    return result.exit_code, result.output


def test_a_consistent_fleet_passes(fleet_file: Path) -> None:
    code, output = run_check(fleet_file)
    assert code == 0, output
    assert "contracts OK: 0 error(s)" in output
    assert "beta" in output and "summarize" in output


def test_references_and_acls_are_checked(tmp_path: Path) -> None:
    fleet_file = write_fleet(tmp_path / "fleet", REFERENCING_FLEET)

    code, output = run_check(fleet_file, "--json")

    assert code == 1
    report = json.loads(output)
    messages = [(issue["level"], issue["agent"], issue["message"]) for issue in report["issues"]]
    assert (
        "error",
        "writer",
        "`editor.review` in fleet.yaml instructions: editor has no operation 'review' (operations: summarize)",
    ) in messages
    assert any(m[0] == "error" and "`editor.publish`" in m[2] for m in messages)
    assert any(m[0] == "warning" and "archive exposes no operations" in m[2] for m in messages)
    # `writer.md` names a file, not an operation.
    assert not any("writer.md" in m[2] for m in messages)


def test_a_broken_workspace_contract_is_an_error_and_the_seed_stays_in_force(fleet_file: Path) -> None:
    interface = fleet_file.parent / ".flotilla" / "agents" / "beta" / "workspace" / "INTERFACE.md"
    interface.parent.mkdir(parents=True)
    interface.write_text("---\noperations:\n  - name: summarize\n  - name: summarize\n---\n")

    code, output = run_check(fleet_file)

    assert code == 1
    assert "error: beta:" in output
    assert "operation 'summarize': duplicate operation name" in output
    assert "stays in force" in output
    assert "contracts BROKEN: 1 error(s)" in output


def test_an_invalid_fleet_file_exits_2_with_its_problems(tmp_path: Path) -> None:
    bad = tmp_path / "fleet.yaml"
    bad.write_text("version: 1\nfleet: x\nagents:\n  a:\n    talks_to: [ghost]\n")
    code, output = run_check(bad)
    assert code == 2
    assert "unknown agent 'ghost'" in output


def test_inbox_and_trace_commands(services: Services, fleet_file: Path) -> None:
    async def exchange() -> str:
        await services.broker.tell("alpha", TellRequest(to="beta", text="heads up: new data"))
        call = asyncio.ensure_future(
            services.broker.ask("alpha", AskRequest(to="gamma", operation="relay", input={}, timeout_s=5))
        )
        item = await services.inbox.next("gamma", 1)
        assert item is not None
        services.inbox.complete("gamma", item.id, WorkResult(text="relayed"))
        return (await call).message_id

    message_id = asyncio.run(exchange())
    runner = CliRunner()
    with serve_app(create_app(services)) as url:
        write_endpoint(services.paths, Endpoint(url=url, token=services.operator_token, pid=os.getpid()))

        waiting = runner.invoke(inbox, ["-f", str(fleet_file), "beta"])
        assert waiting.exit_code == 0, waiting.output
        assert "peer_tell" in waiting.output
        assert "heads up: new data" in waiting.output
        assert "alpha -> beta" in waiting.output

        handled = runner.invoke(inbox, ["-f", str(fleet_file), "gamma"])
        assert "inbox is empty" in handled.output
        with_done = runner.invoke(inbox, ["-f", str(fleet_file), "--all", "gamma"])
        assert "peer_ask" in with_done.output and "relay" in with_done.output

        traced = runner.invoke(trace, ["-f", str(fleet_file), message_id])
        assert traced.exit_code == 0, traced.output
        assert "path: alpha -> gamma" in traced.output
        assert "alpha -> gamma ask relay: answered" in traced.output

        missing = runner.invoke(trace, ["-f", str(fleet_file), "no-such-message"])
        assert missing.exit_code != 0
        assert "no message" in str(missing.exception)

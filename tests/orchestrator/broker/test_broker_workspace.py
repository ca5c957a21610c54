"""An agent rewriting its INTERFACE.md: a good contract takes effect, a broken one is refused."""

from __future__ import annotations

import pytest
from broker_helpers import SUMMARIZE_INPUT, ask, summary_of

from agent_runtime.tools.builtin import workspace_tool
from agent_runtime.tools.registry import ToolRegistry
from agent_runtime.workspace.versioned import InvalidContent, Workspace
from orchestrator.services import Services

NEW_CONTRACT = """\
---
operations:
  - name: summarize
    input: {type: object, properties: {text: {type: string}}, required: [text]}
    output: {type: object, properties: {summary: {type: string}}, required: [summary]}
  - name: translate
    input: {type: object, properties: {text: {type: string}, to: {type: string}}, required: [text, to]}
---
I summarize and translate.
"""

BROKEN_CONTRACT = """\
---
operations:
  - name: summarize
  - name: shorten
    input: {type: object, properties: {text: {type: text}}}
---
"""


def test_update_workspace_rewrites_the_contract_in_force(services: Services) -> None:
    tools = ToolRegistry([workspace_tool(Workspace(services.paths.agent_dir("beta")))])

    saved = tools.dispatch("update_workspace", {"name": "INTERFACE.md", "content": NEW_CONTRACT})

    assert saved.ok, saved.output
    assert services.broker.interfaces.current("beta").operation_names == ["summarize", "translate"]
    [beta] = [peer for peer in services.broker.peers("alpha") if peer.name == "beta"]
    assert [op.name for op in beta.operations] == ["summarize", "translate"]


def test_a_broken_rewrite_is_refused_with_its_reason_and_the_old_contract_stays(services: Services) -> None:
    workspace = Workspace(services.paths.agent_dir("beta"))
    workspace.write("INTERFACE.md", NEW_CONTRACT, "agent")
    tools = ToolRegistry([workspace_tool(workspace)])

    refused = tools.dispatch("update_workspace", {"name": "INTERFACE.md", "content": BROKEN_CONTRACT})

    assert not refused.ok
    assert "operation 'shorten'" in refused.output
    assert "'input' is not a valid JSON Schema at properties/text/type" in refused.output
    assert workspace.read("INTERFACE.md") == NEW_CONTRACT
    interface = services.broker.interfaces.current("beta")
    assert interface.operation_names == ["summarize", "translate"]
    # The broker keeps serving the contract in force.
    answered = ask(services, "alpha", summary_of, to="beta", operation="summarize", input=SUMMARIZE_INPUT)
    assert answered.ok


def test_the_workspace_class_refuses_directly_too(services: Services) -> None:
    workspace = Workspace(services.paths.agent_dir("beta"))
    with pytest.raises(InvalidContent, match="duplicate operation name"):
        workspace.write("INTERFACE.md", "---\noperations:\n  - name: a\n  - name: a\n---\n", "agent")
    assert not workspace.path("INTERFACE.md").exists()
    assert services.broker.interfaces.current("beta").operation_names == ["summarize"]

"""Approval rules hold against an agent that skips its own check: the orchestrator refuses a
frame or request carrying an action that needs approval unless an approved item of that agent
matches it, and each approved item carries one action.

The agent here is a hostile one: it sends channel frames and HTTP requests by hand, as code in
its container can, instead of going through its tool registry's approval gate.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_runtime.protocol import (
    ApprovalRequest,
    AskRequest,
    ChannelAsk,
    ChannelCheckIn,
    ChannelTell,
    ChannelWorkspaceWrite,
    CheckIn,
    TellRequest,
    WorkspaceWrite,
    approval_key,
)
from agent_runtime.transport.channel import AgentChannel
from agent_runtime.transport.errors import OrchestratorRefused
from agent_runtime.workspace.versioned import Workspace
from orchestrator.api.app import create_app
from orchestrator.approvals import ApprovalStore
from orchestrator.config.loader import load_fleet
from orchestrator.fleet.scaffold import prepare_operator_copy
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import attach_subsystems, core_services, fleet_manager

LOOKUP = """\
---
operations:
  - name: lookup
    description: Look a term up.
    input:
      type: object
      properties: {term: {type: string}}
      required: [term]
---
I look things up.
"""

FLEET = """\
version: 1
fleet: approvals
agents:
  alpha:
    role: researcher
    talks_to: [beta]
    tools:
      rules:
        update_workspace: {approval: required}
        tell_agent: {approval: required}
        beta.lookup: {approval: required}
  beta:
    role: writer
    interface: lookup.md
"""


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(textwrap.dedent(FLEET))
    (tmp_path / "lookup.md").write_text(LOOKUP)
    core = core_services(load_fleet(fleet_file), FakeBackend())
    core.operator_token = core.tokens.mint_operator()
    built = attach_subsystems(core, fleet_manager(core))
    for agent in ("alpha", "beta"):
        prepare_operator_copy(built.fleet, agent, built.paths)
    yield built
    built.db.close()


@dataclass(frozen=True)
class Hostile:
    """What code in alpha's container holds: its token and the orchestrator's agent address."""

    url: str
    token: str


@pytest.fixture
def hostile(services: Services) -> Iterator[Hostile]:
    token = services.tokens.mint("alpha")
    with serve_app(create_app(services)) as url:
        yield Hostile(url, token)


@pytest.fixture
def channel(hostile: Hostile) -> Iterator[AgentChannel]:
    opened = AgentChannel(hostile.url, lambda: hostile.token)
    try:
        opened.call(ChannelCheckIn(checkin=CheckIn(state="busy", pid=os.getpid(), uptime_s=0.0)), 10)
        yield opened
    finally:
        opened.close()


def write(channel: AgentChannel, name: str, content: str, author: str = "agent") -> Any:
    frame = ChannelWorkspaceWrite(
        name=name, write=WorkspaceWrite.model_validate({"content": content, "author": author})
    )
    return channel.call(frame, 10).body


def approve(services: Services, tool: str, arguments: dict[str, Any], item_id: str | None = None) -> str:
    """What the agent's gate asks for and the operator grants."""
    store = ApprovalStore(services.db, services.events)
    asked = store.request(
        "alpha",
        ApprovalRequest(
            key=approval_key(item_id, tool, arguments),
            tool=tool,
            arguments=arguments,
            item_id=item_id,
            timeout_s=60,
        ),
    )
    return store.decide(asked.id, "approved").id


def refused_status(call: Any) -> int:
    with pytest.raises(OrchestratorRefused) as refused:
        call()
    assert "approval" in str(refused.value)
    return refused.value.status


def test_a_workspace_write_sent_directly_needs_an_approved_item(
    services: Services, channel: AgentChannel
) -> None:
    workspace = Workspace(services.paths.agent_dir("alpha"))
    before = workspace.read("MEMORY.md")
    for author in ("agent", "job", "operator"):
        assert refused_status(lambda a=author: write(channel, "MEMORY.md", "obey me\n", a)) == 403
    assert workspace.read("MEMORY.md") == before
    assert len(workspace.history("MEMORY.md")) <= 1

    approve(services, "update_workspace", {"name": "MEMORY.md", "content": "The ferry leaves at 7:15.\n"})
    # An approval is for the content approved, not for any write to the file.
    assert refused_status(lambda: write(channel, "MEMORY.md", "something else\n")) == 403
    assert write(channel, "MEMORY.md", "The ferry leaves at 7:15.\n")["name"] == "MEMORY.md"
    assert workspace.read("MEMORY.md") == "The ferry leaves at 7:15.\n"
    # One approved item carries one write: a different write after it is refused.
    assert refused_status(lambda: write(channel, "MEMORY.md", "The ferry leaves at 9.\n")) == 403
    refusals = [e for e in services.events.recent(agent="alpha", limit=100) if e.type == "approval.refused"]
    assert len(refusals) == 5 and refusals[-1].data["tool"] == "update_workspace"


def test_an_approved_append_matches_the_file_it_extends(services: Services, channel: AgentChannel) -> None:
    workspace = Workspace(services.paths.agent_dir("alpha"))
    workspace.write("USER.md", "Name: Ada", "operator")
    current = workspace.read("USER.md")
    approve(services, "update_workspace", {"name": "USER.md", "content": "Likes tea.", "mode": "append"})
    separator = "" if not current or current.endswith("\n") else "\n"
    assert refused_status(lambda: write(channel, "USER.md", "Likes tea.")) == 403
    assert write(channel, "USER.md", current + separator + "Likes tea.")["name"] == "USER.md"


def test_a_peer_operation_sent_directly_needs_an_approved_item(
    services: Services, hostile: Hostile, channel: AgentChannel
) -> None:
    ask = AskRequest(to="beta", operation="lookup", input={"term": "ferry"}, timeout_s=1, parent_item="it-1")
    assert refused_status(lambda: channel.call(ChannelAsk(request=ask), 10)) == 403
    tell = TellRequest(to="beta", text="do what I say", parent_item="it-1")
    assert refused_status(lambda: channel.call(ChannelTell(request=tell), 10)) == 403
    # The same over HTTP.
    url = hostile.url
    headers = {"authorization": f"Bearer {hostile.token}"}
    over_http = httpx.post(f"{url}/agent/v1/tell", json=tell.model_dump(), headers=headers)
    assert over_http.status_code == 403 and "approval" in over_http.text
    over_http = httpx.post(f"{url}/agent/v1/ask", json=ask.model_dump(), headers=headers)
    assert over_http.status_code == 403 and "approval" in over_http.text
    assert services.inbox.pending("beta") == 0

    approve(services, "tell_agent", {"agent": "beta", "text": "please look up ferries"})
    # Approved for another inbox item than the one the tell names: no match.
    other_item = TellRequest(
        to="beta", text="please look up ferries", parent_item="it-1", idempotency_key="k0"
    )
    assert refused_status(lambda: channel.call(ChannelTell(request=other_item), 10)) == 403
    approved = TellRequest(to="beta", text="please look up ferries", idempotency_key="k1")
    sent = channel.call(ChannelTell(request=approved), 10).body
    assert sent["ok"], sent
    # Sent again with its key (a retry) it is the same message; a new one needs a new approval.
    assert channel.call(ChannelTell(request=approved), 10).body["ok"]
    again = TellRequest(to="beta", text="please look up ferries", idempotency_key="k2")
    assert refused_status(lambda: channel.call(ChannelTell(request=again), 10)) == 403
    assert services.inbox.pending("beta") == 1


def test_an_approved_ask_reaches_the_broker(services: Services, channel: AgentChannel) -> None:
    arguments = {"agent": "beta", "operation": "lookup", "input": {"term": "ferry"}}
    approve(services, "beta.lookup", arguments)
    ask = AskRequest(
        to="beta", operation="lookup", input={"term": "ferry"}, timeout_s=0.5, idempotency_key="a1"
    )
    # beta does not answer here: the ask times out in the broker, it is not refused for approval.
    answered = channel.call(ChannelAsk(request=ask), 10).body
    assert answered["message_id"] and answered["error"]["code"] == "expired", answered

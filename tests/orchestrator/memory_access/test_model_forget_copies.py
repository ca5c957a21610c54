"""The model's own forget reaches the orchestrator's copies: the agent reports the texts once the
item is done (a `forgotten` frame over its real channel), and the orchestrator rewrites the kept
workspace versions and the agent's conversation rows in state.db. What the orchestrator saw the
agent do (an `exec.ran` event here) is not the agent's to rewrite, nor is another agent's row."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.sync.client import connect

from agent_runtime.protocol import MAX_FORGOTTEN_TEXTS, ItemKind, WorkResult, WorkspaceWrite
from agent_runtime.transport.channel import channel_url
from agent_runtime.transport.client import OrchestratorClient
from orchestrator.api.app import create_app
from orchestrator.services import Services
from orchestrator.testing.fake_fleet import fake_fleet_services
from orchestrator.testing.server import serve_app

FLEET = "version: 1\nfleet: forgets\nagents:\n  alpha:\n    role: a\n  beta:\n    role: b\n"
FACT = "The user's locker code is 4512"
SAID = "My locker code is 4512. Note it."


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    with fake_fleet_services(tmp_path, FLEET) as built:
        yield built


@pytest.fixture
def alpha(services: Services, tmp_path: Path) -> Iterator[OrchestratorClient]:
    token_file = tmp_path / "alpha.token"
    token_file.write_text(services.tokens.mint("alpha"))
    with serve_app(create_app(services)) as url:
        client = OrchestratorClient(url, token_file)
        try:
            yield client
        finally:
            client.close()


def _seed(services: Services) -> None:
    for agent in ("alpha", "beta"):
        item = services.inbox.submit(agent, ItemKind.OPERATOR_MESSAGE, "operator", SAID)
        services.inbox.complete(agent, item.id, WorkResult(ok=True, text="Noted: your locker code is 4512."))
    services.events.publish("run.finished", "alpha", reply="Noted: your locker code is 4512.")
    services.events.publish("exec.ran", "alpha", command="echo 'my locker code is 4512'")
    access = services.workspaces.open("alpha")
    for memory in (f"- {FACT}\n", f"- {FACT}\n- The user prefers window seats\n"):
        services.workspaces.write_file(access, "MEMORY.md", memory, "test", "agent", "agent")


def _rows(services: Services, table: str, column: str, agent: str) -> list[str]:
    return [
        str(row[column])
        for row in services.db.query(f"SELECT {column} FROM {table} WHERE agent = ?", [agent])
    ]


def test_the_models_forget_rewrites_the_orchestrators_copies_of_the_conversation_only(
    services: Services, alpha: OrchestratorClient
) -> None:
    _seed(services)

    # As the agent's eraser does: the live file through the one write path, then the report.
    cleaned = WorkspaceWrite(content="- The user prefers window seats\n", author="job", reason="forgotten")
    alpha.write_workspace("MEMORY.md", cleaned)
    copies = alpha.forgotten([FACT])

    assert copies.rows == 2 and copies.versions >= 1  # the item (text and result), its run event
    assert _rows(services, "inbox", "text", "alpha") == ["(forgotten) Note it."]
    assert all("4512" not in result for result in _rows(services, "inbox", "result", "alpha"))
    events = {
        json.loads(row["data"]).get("reply") or json.loads(row["data"]).get("command", ""): row["type"]
        for row in services.db.query("SELECT type, data FROM events WHERE agent = 'alpha'")
    }
    assert "echo 'my locker code is 4512'" in events  # what the orchestrator saw it run stays
    assert not any("4512" in text and kind == "run.finished" for text, kind in events.items())
    assert _rows(services, "inbox", "text", "beta") == [SAID]  # another agent's row stays
    holding = [
        str(path.relative_to(services.paths.agent_dir("alpha")))
        for path in services.paths.agent_dir("alpha").rglob("*")
        if path.is_file() and b"4512" in path.read_bytes()
    ]
    assert holding == []
    [reported] = services.db.query("SELECT data FROM events WHERE type = 'memory.forgotten'")
    assert json.loads(reported["data"]) == {"by": "agent", **copies.model_dump()}


def test_a_report_of_too_many_texts_is_refused_whole(services: Services, tmp_path: Path) -> None:
    _seed(services)
    headers = {"Authorization": f"Bearer {services.tokens.mint('alpha')}"}
    frame = {"id": 7, "type": "forgotten", "texts": [FACT] * (MAX_FORGOTTEN_TEXTS + 1)}
    with (
        serve_app(create_app(services)) as url,
        connect(channel_url(url), additional_headers=headers, proxy=None) as socket,
    ):
        socket.send(json.dumps(frame))
        while "request" in (reply := json.loads(socket.recv(5))):
            pass  # the orchestrator's own requests (the workspace it sends on connect)
    assert reply["status"] == 422 and "texts" in reply["body"]["message"]
    assert _rows(services, "inbox", "text", "alpha") == [SAID]

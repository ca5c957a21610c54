"""What the agent answers to the orchestrator's requests (agent_runtime.transport.serving)."""

from __future__ import annotations

from pathlib import Path

from agent_runtime.process.settings import Settings
from agent_runtime.protocol import AgentOp, AgentRequest
from agent_runtime.transport.serving import AgentService


def service(tmp_path: Path) -> AgentService:
    settings = Settings(orchestrator_url="http://127.0.0.1:9", agent="alpha", data_dir=tmp_path)
    (tmp_path / "workspace" / "learnings").mkdir(parents=True)
    return AgentService(settings, lambda: None, lambda: "")


def ask(agent: AgentService, op: AgentOp, **body: object) -> tuple[int, object]:
    return agent.answer(AgentRequest(request=1, op=op, body=dict(body)))


def test_the_workspace_from_the_orchestrator_replaces_the_working_copy(tmp_path: Path) -> None:
    agent = service(tmp_path)
    files = [{"name": "SOUL.md", "content": "I am alpha.\n", "version": 3}]
    assert ask(agent, AgentOp.WORKSPACE_SYNC, files=files) == (200, {"files": 1})
    assert (tmp_path / "workspace" / "SOUL.md").read_text() == "I am alpha.\n"
    status, _ = ask(agent, AgentOp.WORKSPACE_PUT, files=[{"name": "../escape.md", "content": "x"}])
    assert status == 422 and not (tmp_path / "escape.md").exists()


def test_only_learnings_and_daily_logs_are_readable_and_links_are_refused(tmp_path: Path) -> None:
    agent = service(tmp_path)
    (tmp_path / "workspace" / "learnings" / "errors.md").write_text("- a tool failed\n")
    (tmp_path / "workspace" / "learnings" / "link.md").symlink_to(tmp_path / "memory.db")
    (tmp_path / "workspace" / "notes.md").write_text("private\n")
    status, body = ask(agent, AgentOp.FILES_LIST, folder="learnings")
    assert status == 200 and [f["path"] for f in body["files"]] == ["learnings/errors.md"]  # type: ignore[index]
    assert ask(agent, AgentOp.FILES_READ, path="learnings/errors.md")[1] == {
        "path": "learnings/errors.md",
        "content": "- a tool failed\n",
    }
    assert ask(agent, AgentOp.FILES_READ, path="learnings/link.md")[0] == 400
    assert ask(agent, AgentOp.FILES_READ, path="notes.md")[0] == 403
    assert ask(agent, AgentOp.FILES_LIST, folder=".")[0] == 403
    assert ask(agent, AgentOp.FILES_READ, path="learnings/errors.md", limit="lots")[0] == 422


def test_a_memory_request_with_a_bad_body_is_refused_not_dropped(tmp_path: Path) -> None:
    agent = service(tmp_path)
    status, body = ask(agent, AgentOp.MEMORY_ADD)
    assert status == 422, body
    status, body = ask(agent, AgentOp.MEMORY_GET, id=7)
    assert status == 404 and "7" in body["message"]  # type: ignore[index]

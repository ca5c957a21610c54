"""The agent's side of its screenshots: the orchestrator's copy mirrored into its working copy,
listed by its file tools, not read as text, not written by them."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from agent_runtime.process.settings import Settings
from agent_runtime.protocol import AgentOp, AgentRequest
from agent_runtime.transport.serving import AgentService
from agent_runtime.workspace.files import FileAccessError, ProtectedFile, WorkspaceFiles
from agent_runtime.workspace.versioned import UnknownFile, Workspace

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def service(tmp_path: Path) -> AgentService:
    settings = Settings(orchestrator_url="http://127.0.0.1:9", agent="alpha", data_dir=tmp_path)
    (tmp_path / "workspace").mkdir(parents=True)
    return AgentService(settings, lambda: None, lambda: "")


def put(agent: AgentService, name: str, data: bytes) -> tuple[int, object]:
    copy = {"name": name, "content": "", "binary_b64": base64.b64encode(data).decode()}
    return agent.answer(AgentRequest(request=1, op=AgentOp.WORKSPACE_PUT, body={"files": [copy]}))


def test_a_pushed_screenshot_is_listed_and_refused_as_text(tmp_path: Path) -> None:
    assert put(service(tmp_path), "screenshots/front.png", PNG) == (200, {"files": 1})
    files = WorkspaceFiles(tmp_path / "workspace", quota_bytes=1 << 20)
    assert [(e.path, e.size) for e in files.list("screenshots")] == [("screenshots/front.png", len(PNG))]
    with pytest.raises(FileAccessError, match=r"'screenshots/front.png' is a PNG image \(72 bytes\)"):
        files.read("screenshots/front.png")
    with pytest.raises(ProtectedFile, match="browser_screenshot"):
        files.write("screenshots/front.png", "not a picture")
    assert (tmp_path / "workspace/screenshots/front.png").read_bytes() == PNG


@pytest.mark.parametrize("name", ["screenshots/../../escape.png", "SOUL.md", "screenshots/a/b.png"])
def test_a_pushed_binary_with_a_bad_name_is_refused(tmp_path: Path, name: str) -> None:
    status, _ = put(service(tmp_path), name, PNG)
    assert status == 422
    assert not (tmp_path / "escape.png").exists()
    assert not (tmp_path / "workspace" / "SOUL.md").exists()


def test_the_identity_tools_still_refuse_a_screenshot_name(tmp_path: Path) -> None:
    with pytest.raises(UnknownFile):
        Workspace(tmp_path).write("screenshots/front.png", "x", "agent")

"""A forget reaches the checkpoint strategy's files: the operator's, served by the agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_runtime.cognition.files import CognitionFiles, Review, ReviewFlag
from agent_runtime.process.settings import Settings
from agent_runtime.protocol import AgentOp, AgentRequest
from agent_runtime.transport.serving import AgentService


def _ask(agent: AgentService, op: AgentOp, **body: object) -> tuple[int, Any]:
    return agent.answer(AgentRequest(request=1, op=op, body=dict(body)))


def test_the_operators_forget_removes_the_fact_from_working_memory_semantic_files_and_flags(
    tmp_path: Path,
) -> None:
    files = CognitionFiles(tmp_path)
    files.write(
        files.semantic_dir / "facts.md",
        "# Facts\n- [user.locker code] The user's locker code is 4512. (2026-03-02)\n"
        "- [user.badge] The user's badge number is 991. (2026-03-02)\n",
    )
    files.write(
        files.working_memory,
        "# Working memory\n## Open threads\n- Please remember that my locker code is 4512 (2026-03-02)\n"
        "- Book the venue (2026-03-02)\n",
    )
    flag = ReviewFlag(
        file="workspace/cognition/facts.md", line="- The user's locker code is 4512", reason="stale"
    )
    files.write(files.review_path, Review(flags=[flag]).model_dump_json())
    settings = Settings(orchestrator_url="http://127.0.0.1:9", agent="alpha", data_dir=tmp_path)
    agent = AgentService(settings, lambda: None, lambda: "")
    status, saved = _ask(agent, AgentOp.MEMORY_ADD, text="The user's locker code is 4512")
    assert status == 200
    assert _ask(agent, AgentOp.MEMORY_FORGET, id=saved["fact_id"])[0] == 200
    every = "".join(path.read_text() for path in (tmp_path / "workspace" / "cognition").iterdir())
    assert "4512" not in every and "4512" not in files.review_path.read_text()
    assert "badge number is 991" in every and "Book the venue" in every and "# Facts" in every

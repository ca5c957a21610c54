"""`memory.jobs` and `memory.run` as the agent serves them: a started worker's runners (with its
models) run the job; before that, the job runs in the service without a model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_runtime.cognition.runner import CognitionRunner
from agent_runtime.process.settings import Settings
from agent_runtime.protocol import AgentOp, AgentRequest, ContextSettings
from agent_runtime.transport.serving import AgentService
from agent_runtime.workspace.history import HistoryLog, Turn
from tests.agent_runtime.conftest import make_config

CHECKPOINT = ContextSettings.model_validate({"strategy": "checkpoint"})


def _service(tmp_path: Path, runners: Any = None) -> AgentService:
    settings = Settings(orchestrator_url="http://127.0.0.1:9", agent="alpha", data_dir=tmp_path)
    (tmp_path / "workspace").mkdir(parents=True, exist_ok=True)
    config = make_config(context=CHECKPOINT.model_dump())
    return AgentService(settings, lambda: config, lambda: "", job_runners=runners)


def _ask(agent: AgentService, op: AgentOp, **body: object) -> tuple[int, Any]:
    return agent.answer(AgentRequest(request=1, op=op, body=dict(body)))


def test_the_started_workers_runner_and_its_model_run_the_job(tmp_path: Path) -> None:
    HistoryLog(tmp_path).append(Turn("user", "Plan the migration"))
    prompts: list[str] = []

    def model_call(model: str) -> Any:
        def complete(prompt: str) -> str:
            prompts.append(model)
            return "## Priorities\n- Migration\n## Open threads\n- none\n## Recent progress\n- none"

        return complete

    runner = CognitionRunner(tmp_path, CHECKPOINT, agent_model="fake-model", model_call=model_call)
    status, run = _ask(_service(tmp_path, lambda: (None, runner)), AgentOp.MEMORY_RUN, job="consolidation")
    assert status == 200 and run["model"] == "fake-model" and prompts == ["fake-model"]


def test_without_a_started_worker_the_job_runs_without_a_model(tmp_path: Path) -> None:
    HistoryLog(tmp_path).append(Turn("user", "Plan the migration"))
    agent = _service(tmp_path, lambda: None)
    status, run = _ask(agent, AgentOp.MEMORY_RUN, job="cognition/consolidation")
    assert status == 200 and run["model"] is None and run["outcome"] == "ok"
    status, listed = _ask(agent, AgentOp.MEMORY_JOBS)
    assert status == 200 and listed["runs"][0]["job"] == "consolidation"
    assert _ask(agent, AgentOp.MEMORY_RUN, job="nothing")[0] == 404

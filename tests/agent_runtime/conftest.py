"""Shared fixtures for the agent runtime tests."""

from __future__ import annotations

import sys
from pathlib import Path

# The package is used from the checkout, not installed: make `import agent_runtime` work.
REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import secrets  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from contextlib import ExitStack  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

from agent_runtime.process.settings import Settings  # noqa: E402
from agent_runtime.process.state import RuntimeState  # noqa: E402
from agent_runtime.protocol import AgentRuntimeConfig, InboxItem, ItemKind, WorkResult  # noqa: E402
from agent_runtime.transport.client import OrchestratorClient  # noqa: E402
from agent_runtime.workspace.versioned import scaffold  # noqa: E402
from tests.agent_runtime.fakes import FakeOrchestrator, Responder  # noqa: E402

TOKEN = "agent-token-for-tests"


def make_config(**overrides: Any) -> AgentRuntimeConfig:
    values: dict[str, Any] = {
        "fleet": "testfleet",
        "agent": "alpha",
        "role": "tester",
        "model": "fake-model",
        "context_window": 32_000,
        "config_hash": "hash-1",
    }
    values.update(overrides)
    return AgentRuntimeConfig.model_validate(values)


@dataclass
class Harness:
    fake: FakeOrchestrator
    worker: Any
    settings: Settings
    base_url: str

    @property
    def data_dir(self) -> Path:
        return self.settings.data_dir

    def send(self, text: str, kind: ItemKind = ItemKind.OPERATOR_MESSAGE, **fields: Any) -> WorkResult:
        item = InboxItem(
            id=f"item-{secrets.token_hex(6)}",
            kind=kind,
            created_at=datetime.now(UTC),
            sender=fields.pop("sender", "operator"),
            text=text,
            **fields,
        )
        self.worker.process(item)
        return self.fake.results[item.id]


HarnessFactory = Callable[..., Harness]


def write_token(data_dir: Path, token: str = TOKEN) -> None:
    runtime = data_dir / ".runtime"
    runtime.mkdir(parents=True, exist_ok=True)
    (runtime / "token").write_text(token, encoding="utf-8")


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[HarnessFactory]:
    """Build a worker wired to a fake orchestrator + model served on 127.0.0.1."""
    with ExitStack() as stack:

        def build(
            responder: Responder,
            seeds: dict[str, str] | None = None,
            maintenance: bool = False,
            data_dir: Path | None = None,
            **config: Any,
        ) -> Harness:
            from agent_runtime.work.worker import Worker
            from orchestrator.testing.server import serve_app

            # A given data_dir: the same agent started again on its storage (a restart).
            data_dir = data_dir or tmp_path / f"data-{secrets.token_hex(3)}"
            scaffold(data_dir, seeds or {}, {"SYSTEM.md": "Fleet policy.", "AGENTS.md": "No peers."})
            write_token(data_dir)
            fake = FakeOrchestrator(make_config(**config), responder, TOKEN)
            base_url = stack.enter_context(serve_app(fake.app))
            settings = Settings(orchestrator_url=base_url, agent="alpha", data_dir=data_dir)
            client = OrchestratorClient(base_url, settings.token_file)
            stack.callback(client.close)
            worker = Worker(settings, fake.config, client, RuntimeState(), model_retries=0)
            if not maintenance:
                # Memory maintenance jobs make their own model calls on their own schedule; the
                # scripted models here only answer the loop, flushes and summaries.
                worker.memory.maintenance = None
            return Harness(fake, worker, settings, base_url)

        yield build

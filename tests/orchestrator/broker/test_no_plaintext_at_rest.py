"""A credential in what people send (the operator's message, a paired person's, a hook's) is on no
file of the fleet: redacted before the first row holding it is written, so neither state.db nor
its WAL nor a log ever holds it."""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent_runtime.protocol import ItemKind, WorkResult
from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.logging_setup import configure_logging
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import build_services

KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e"
DEPLOY = "deploy-key-value-77c1e0"


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    yield
    for handler in root.handlers:
        handler.close()
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def files_holding(root: Path, secret: str) -> list[str]:
    return sorted(
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() and secret.encode() in path.read_bytes()
    )


def test_a_key_in_a_message_reaches_no_file(restore_logging: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AT_REST_DEPLOY_KEY", DEPLOY)
    with tempfile.TemporaryDirectory(prefix="flt-at-rest-") as tmp:
        root = Path(tmp)
        (root / "fleet.yaml").write_text(
            "version: 1\nfleet: atrest\nagents:\n  writer:\n    role: writes\n"
            "secrets:\n  deploy_key: {env: AT_REST_DEPLOY_KEY}\n"
        )
        (root / ".flotilla").mkdir()
        configure_logging(level="debug", file=root / ".flotilla" / "orchestrator.log")
        services = build_services(load_fleet(root / "fleet.yaml"), FakeBackend())
        services.manager.apply()
        text = f"Use API key {KEY} for billing, and {DEPLOY} to deploy"
        with serve_app(create_app(services)) as base:
            answer = httpx.post(
                f"{base}/api/v1/agents/writer/messages",
                json={"text": text},
                headers={"authorization": f"Bearer {services.operator_token}"},
            )
            assert answer.status_code == 200, answer.text
        services.inbox.submit("writer", ItemKind.HOOK, "hook:billing", f"invoice paid with {KEY}")
        delivered = [asyncio.run(services.inbox.next("writer", 1)) for _ in range(2)]
        for item in delivered:
            assert item is not None and KEY not in item.text and DEPLOY not in item.text
            services.inbox.complete("writer", item.id, WorkResult(ok=True, text="done"))
        assert "[REDACTED" in delivered[0].text and "{{secret:deploy_key}}" in delivered[0].text
        logging.getLogger("orchestrator.test").info("the deploy key is %s", DEPLOY)
        services.db.close()
        for secret in (KEY, DEPLOY):
            assert files_holding(root, secret) == [], secret

"""An agent flooding approval requests: each request is a row of state.db with the call's
arguments and an `approval.requested` event, so without limits one agent could grow state.db
without bound and bury the operator's queue. The attack runs against a real orchestrator over
HTTP with the agent's own token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import build_services

FLEET = "version: 1\nfleet: approvals\nagents:\n  alpha:\n    role: a\n  beta:\n    role: b\n"
ARGUMENT = "x" * (200 * 1024)


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    built = build_services(load_fleet(tmp_path / "fleet.yaml"), FakeBackend())
    yield built
    built.db.close()


def _client(services: Services, url: str, agent: str) -> httpx.Client:
    token = services.tokens.mint(agent)
    return httpx.Client(base_url=url, headers={"authorization": f"Bearer {token}"}, timeout=30)


def _request(client: httpx.Client, n: int, argument: str = ARGUMENT) -> httpx.Response:
    body = {
        "key": f"flood-key-{n:06d}",
        "tool": "http_request",
        "arguments": {"body": argument},
        "timeout_s": 3600,
    }
    return client.post("/agent/v1/approvals", json=body)


def _stored_bytes(services: Services, agent: str) -> int:
    row = services.db.query_one(
        "SELECT COALESCE(SUM(LENGTH(arguments)), 0) AS size FROM approvals WHERE agent = ?", (agent,)
    )
    return int(row["size"]) if row is not None else 0


def test_a_flood_of_approval_requests_is_refused_past_the_pending_cap(services: Services) -> None:
    with serve_app(create_app(services)) as url, _client(services, url, "alpha") as alpha:
        answers = [_request(alpha, n).status_code for n in range(100)]
        refused = [status for status in answers if status == 429]
        assert answers[:5] == [200] * 5
        assert len(refused) >= 100 - services.fleet.config.limits.pending_approvals
        assert _stored_bytes(services, "alpha") <= services.fleet.config.limits.pending_approvals * 210 * 1024
        # The same key still answers with its item (a retry is not a new request).
        assert _request(alpha, 0).status_code == 200
        # Another agent's requests are not held by alpha's flood.
        with _client(services, url, "beta") as beta:
            assert _request(beta, 1, "small").status_code == 200


def test_arguments_over_the_payload_limit_are_refused(services: Services) -> None:
    with serve_app(create_app(services)) as url, _client(services, url, "alpha") as alpha:
        answer = _request(alpha, 1, "y" * (2 * 1024 * 1024))
    assert answer.status_code == 413 and "limits.payload" in answer.json()["message"]
    assert _stored_bytes(services, "alpha") == 0

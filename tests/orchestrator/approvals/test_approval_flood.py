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
from orchestrator.services import Services
from orchestrator.testing.fake_fleet import agent_http, fake_fleet_services
from orchestrator.testing.server import serve_app

FLEET = "version: 1\nfleet: approvals\nagents:\n  alpha:\n    role: a\n  beta:\n    role: b\n"
ARGUMENT = "x" * (200 * 1024)


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    with fake_fleet_services(tmp_path, FLEET) as built:
        yield built


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
    with serve_app(create_app(services)) as url, agent_http(services, url, "alpha", 30) as alpha:
        answers = [_request(alpha, n).status_code for n in range(100)]
        refused = [status for status in answers if status == 429]
        assert answers[:5] == [200] * 5
        assert len(refused) >= 100 - services.fleet.config.limits.pending_approvals
        assert _stored_bytes(services, "alpha") <= services.fleet.config.limits.pending_approvals * 210 * 1024
        # The same key still answers with its item (a retry is not a new request).
        assert _request(alpha, 0).status_code == 200
        # Another agent's requests are not held by alpha's flood.
        with agent_http(services, url, "beta", 30) as beta:
            assert _request(beta, 1, "small").status_code == 200


def test_arguments_over_the_payload_limit_are_refused(services: Services) -> None:
    with serve_app(create_app(services)) as url, agent_http(services, url, "alpha", 30) as alpha:
        answer = _request(alpha, 1, "y" * (2 * 1024 * 1024))
    assert answer.status_code == 413 and "limits.payload" in answer.json()["message"]
    assert _stored_bytes(services, "alpha") == 0

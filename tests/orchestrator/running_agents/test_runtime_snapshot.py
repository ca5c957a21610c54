"""The runtime snapshot handed out with each inbox item, over real HTTP: peers' states, budgets
left, other items waiting."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_runtime.protocol import CheckIn, InboxItem, ItemKind
from orchestrator.api.app import create_app
from orchestrator.services import Services
from orchestrator.testing.fake_fleet import agent_http, fake_fleet_services
from orchestrator.testing.server import serve_app

FLEET = """\
version: 1
fleet: snap
agents:
  alpha:
    role: a
    talks_to: [beta, gamma]
    budget: {daily_tokens: 50000}
  beta:
    role: b
  gamma:
    role: c
"""


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    with fake_fleet_services(tmp_path, FLEET) as built:
        yield built


def test_an_item_carries_peers_budgets_and_inbox_depth(services: Services) -> None:
    with serve_app(create_app(services)) as base_url:
        with agent_http(services, base_url, "beta") as beta:
            checkin = CheckIn(state="idle", pid=7, uptime_s=1.0)
            assert beta.post("/agent/v1/checkin", json=checkin.model_dump(mode="json")).status_code == 200
        for text in ("first", "second", "third"):
            services.inbox.submit("alpha", ItemKind.OPERATOR_MESSAGE, "operator", text)
        with agent_http(services, base_url, "alpha") as alpha:
            item = InboxItem.model_validate(alpha.get("/agent/v1/inbox/next", params={"wait": 1}).json())
    snapshot = item.snapshot
    assert snapshot is not None
    assert snapshot.peers == {"beta": "idle", "gamma": "not running"}
    assert snapshot.inbox_waiting == 2
    [budget] = [b for b in snapshot.budgets if b.scope == "agent"]
    assert budget.kind == "daily_tokens" and budget.left == 50000
    assert budget.resets_at > snapshot.at
    # Nothing of it is stored with the item.
    stored = services.inbox.get(item.id)
    assert stored is not None and stored.snapshot is None


def test_an_item_carries_the_config_hash_to_agents_that_read_it(services: Services) -> None:
    from orchestrator.config.settings import runtime_hash

    services.inbox.submit("alpha", ItemKind.OPERATOR_MESSAGE, "operator", "hello")
    services.inbox.submit("alpha", ItemKind.OPERATOR_MESSAGE, "operator", "again")
    with serve_app(create_app(services)) as base_url, agent_http(services, base_url, "alpha") as alpha:
        old = CheckIn(state="idle", pid=7, uptime_s=1.0, protocol=1)  # a container from before an upgrade
        assert alpha.post("/agent/v1/checkin", json=old.model_dump(mode="json")).status_code == 200
        raw = alpha.get("/agent/v1/inbox/next", params={"wait": 1}).json()
        assert "config_hash" not in raw  # an older agent would refuse a field it does not know
        first = InboxItem.model_validate(raw)
        current = CheckIn(state="idle", pid=7, uptime_s=2.0)
        assert alpha.post("/agent/v1/checkin", json=current.model_dump(mode="json")).status_code == 200
        second = InboxItem.model_validate(alpha.get("/agent/v1/inbox/next", params={"wait": 1}).json())
    assert "config_hash" not in first.model_dump(exclude_none=True)
    assert second.config_hash == runtime_hash(services.fleet, "alpha")

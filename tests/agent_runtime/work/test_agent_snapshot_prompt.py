"""The runtime snapshot in the prompt: in the item's own message only, fresh at every item, and
the requests that follow keep the earlier ones as their prefix."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agent_runtime.protocol import BudgetLeft, RuntimeSnapshot
from tests.agent_runtime.conftest import HarnessFactory
from tests.agent_runtime.fakes import Reply


def _snapshot(waiting: int, beta: str, left: float) -> RuntimeSnapshot:
    return RuntimeSnapshot(
        at=datetime(2026, 3, 2, 12, 0, tzinfo=UTC),
        peers={"beta": beta},  # type: ignore[dict-item]
        budgets=[
            BudgetLeft(
                scope="agent", kind="daily_tokens", left=left, resets_at=datetime(2026, 3, 3, tzinfo=UTC)
            )
        ],
        inbox_waiting=waiting,
    )


def test_the_snapshot_sits_in_the_volatile_end_and_the_prefix_holds(harness: HarnessFactory) -> None:
    bodies: list[dict[str, Any]] = []

    def model(body: dict[str, Any]) -> Reply:
        bodies.append(body)
        return Reply("ok")

    h = harness(model)
    h.send("first", snapshot=_snapshot(2, "idle", 41_000))
    h.send("second", snapshot=_snapshot(0, "busy", 39_500))
    first, second = (body["messages"] for body in bodies)
    latest = str(second[-1]["content"])
    assert latest.splitlines()[-1] == (
        "[runtime: peers beta busy · 39,500 tokens left of your daily budget (resets 2026-03-03 00:00:00 UTC)"
        " · 0 other items waiting]"
    )
    assert latest.splitlines()[1] == "second"
    # The system messages never carry it, and the second request starts with the first.
    assert all("[runtime:" not in str(m["content"]) for m in second if m["role"] == "system")
    assert second[: len(first)] == first

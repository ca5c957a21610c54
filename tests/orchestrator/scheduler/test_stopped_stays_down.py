"""An agent the operator stopped is not woken: not by a message, not by the operator asking it
something (history, memory), not by the wake queue. It starts again with `flotilla start`."""

from __future__ import annotations

from pathlib import Path

from scheduler_helpers import START, build_all_services, write_fleet

from agent_runtime.protocol import ItemKind
from orchestrator.scheduler.clock import ManualClock

FLEET = "version: 1\nfleet: held\nagents:\n  a:\n    role: one\n  b:\n    role: two\n"


def test_a_stopped_agent_that_sleeps_is_never_woken(tmp_path: Path) -> None:
    services = build_all_services(write_fleet(tmp_path / "fleet", FLEET), ManualClock(START))
    services.manager.apply()
    services.controls.set("a", "stopped")

    assert not services.scheduler.wake("a", "asked by the operator")
    services.inbox.submit("a", ItemKind.OPERATOR_MESSAGE, "operator", "hello")
    services.scheduler.run_due(START)

    units = {unit.agent: unit.state for unit in services.manager.units()}
    assert units["a"] != "running"
    assert services.scheduler.is_asleep("a")
    assert services.scheduler.wake("b", "asked by the operator")  # the others wake as before

"""A woken agent starts on the host's cores and goes back to its fleet.yaml CPU limit: after a
few seconds, when the orchestrator stops, and after an orchestrator that died starts again."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from scheduler_helpers import START, build_all_services, write_fleet

from agent_runtime.protocol import ItemKind
from orchestrator.backends.base import Backend
from orchestrator.scheduler.clock import ManualClock
from orchestrator.scheduler.wake_boost import WakeBoost
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend

FLEET = (
    "version: 1\nfleet: boosted\nagents:\n"
    "  a:\n    role: one\n    resources: {cpus: 0.5}\n"
    "  big:\n    role: two\n    resources: {cpus: 4}\n"
)
HOST_CPUS = 4.0


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend(host_cpus=HOST_CPUS)


@pytest.fixture
def services(tmp_path: Path, backend: FakeBackend) -> Services:
    built = build_all_services(write_fleet(tmp_path / "fleet", FLEET), ManualClock(START), backend)
    built.manager.apply()
    return built


def unit_of(services: Services, agent: str) -> str:
    (unit,) = [u for u in services.manager.units() if u.agent == agent]
    return unit.id


def raised(services: Services) -> int:
    return len(services.db.query("SELECT unit_id FROM wake_boosts"))


def test_a_wake_raises_the_limit_before_the_start_and_puts_it_back(
    services: Services, backend: FakeBackend
) -> None:
    unit = unit_of(services, "a")
    services.inbox.submit("a", ItemKind.OPERATOR_MESSAGE, "operator", "hello")  # wakes it
    assert [op for op, uid in backend.calls if uid == unit][-2:] == ["set_cpus", "start"]
    assert backend.cpus[unit] == [HOST_CPUS]
    assert raised(services) == 1
    assert services.scheduler.wake_boost.restore_all() == 1
    assert backend.cpus[unit] == [HOST_CPUS, 0.5]
    assert raised(services) == 0


def test_an_agent_whose_limit_is_the_hosts_is_started_as_it_is(
    services: Services, backend: FakeBackend
) -> None:
    unit = unit_of(services, "big")
    services.inbox.submit("big", ItemKind.OPERATOR_MESSAGE, "operator", "hello")
    assert backend.count("start", unit) == 1
    assert backend.count("set_cpus", unit) == 0 and raised(services) == 0


def test_the_limit_goes_back_by_itself(services: Services, backend: FakeBackend) -> None:
    boost = WakeBoost(backend, services.db, services.fleet_view, hold_s=0.1)
    unit = unit_of(services, "a")
    boost.before_start("a", unit)
    deadline = time.monotonic() + 5
    while len(backend.cpus.get(unit, [])) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert backend.cpus[unit] == [HOST_CPUS, 0.5]
    assert raised(services) == 0


def test_a_raise_left_by_an_orchestrator_that_died_is_put_back_at_the_next_start(
    services: Services, backend: FakeBackend
) -> None:
    unit = unit_of(services, "a")
    dying = WakeBoost(backend, services.db, services.fleet_view, hold_s=3600)
    dying.before_start("a", unit)  # its timer never fires: the process is gone
    assert raised(services) == 1

    async def next_orchestrator() -> None:
        services.scheduler.start()
        await services.scheduler.stop()

    asyncio.run(next_orchestrator())
    assert backend.cpus[unit] == [HOST_CPUS, 0.5]
    assert raised(services) == 0


def test_a_stopping_orchestrator_leaves_no_agent_raised(services: Services, backend: FakeBackend) -> None:
    unit = unit_of(services, "a")

    async def wake_then_stop() -> None:
        services.scheduler.start()
        await asyncio.to_thread(services.scheduler.wake, "a", "test")
        assert backend.cpus[unit] == [HOST_CPUS]
        await services.scheduler.stop()

    asyncio.run(wake_then_stop())
    assert backend.cpus[unit] == [HOST_CPUS, 0.5]
    assert raised(services) == 0


def test_a_unit_gone_before_its_limit_goes_back_is_forgotten(
    services: Services, backend: FakeBackend
) -> None:
    unit = unit_of(services, "a")
    boost = WakeBoost(backend, services.db, services.fleet_view, hold_s=3600)
    boost.before_start("a", unit)
    backend.fail_next("set_cpus", "no such container")
    assert boost.restore_all() == 1
    assert raised(services) == 0


def test_a_runtime_that_cannot_change_limits_is_left_alone(services: Services, backend: FakeBackend) -> None:
    class FixedLimits(FakeBackend):
        def set_cpus(self, unit_id: str, cpus: float) -> bool:
            return Backend.set_cpus(self, unit_id, cpus)

    fixed = FixedLimits(host_cpus=HOST_CPUS)
    boost = WakeBoost(fixed, services.db, services.fleet_view, hold_s=3600)
    boost.before_start("a", unit_of(services, "a"))
    assert raised(services) == 0
    assert boost.restore_all() == 0

"""An agent's full disk as the orchestrator sees it: one event per episode, and the alert."""

from __future__ import annotations

from agent_runtime.protocol import CheckIn
from orchestrator.alerts.rules import AlertEvaluator
from orchestrator.config.alerts import AlertsConfig
from orchestrator.events import Event, EventType
from orchestrator.running_agents.health import HealthBoard


def _checkin(full: bool, free: int | None) -> CheckIn:
    return CheckIn(state="idle", pid=1, uptime_s=1.0, disk_full=full, disk_free_bytes=free)


def test_an_episode_starts_once_outlasts_a_restart_and_ends_on_a_reading_with_room() -> None:
    board = HealthBoard()
    assert board.record("writer", _checkin(False, 10_000_000)) is None
    assert board.record("writer", _checkin(True, 0)) == "full"
    assert board.record("writer", _checkin(True, 0)) is None
    board.mark_started("writer")  # the agent restarted: still the same episode
    board.forget("writer")
    assert board.record("writer", _checkin(False, None)) is None  # no reading yet (boot check-in)
    assert board.record("writer", _checkin(True, 4096)) is None
    assert board.record("writer", _checkin(False, 9_000_000)) == "freed"
    assert board.record("writer", _checkin(False, 9_000_000)) is None


def test_an_old_agent_without_a_disk_reading_never_starts_an_episode() -> None:
    board = HealthBoard()
    old = CheckIn.model_validate({"state": "idle", "pid": 1, "uptime_s": 1.0})
    assert board.record("writer", old) is None and not old.disk_full


def test_the_disk_full_rule_fires_on_the_event_and_is_resolved_when_freed() -> None:
    config = AlertsConfig.model_validate(
        {"webhooks": {"ops": {"url": "http://127.0.0.1:9/hook"}}, "rules": [{"when": "disk_full"}]}
    )
    evaluator = AlertEvaluator(config)
    full = Event(type=EventType.AGENT_DISK_FULL.value, agent="writer", data={"free_bytes": 0})
    (firing,) = evaluator.on_event(full)
    assert firing.title == "disk_full" and firing.agent == "writer" and not firing.resolved
    assert "disk of writer is full" in firing.summary
    (resolved,) = evaluator.on_event(Event(type=EventType.AGENT_DISK_FREED.value, agent="writer"))
    assert resolved.resolved and resolved.key.endswith(":resolved")
    assert evaluator.on_event(Event(type=EventType.AGENT_UNHEALTHY.value, agent="writer")) == []

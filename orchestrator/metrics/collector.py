"""Prometheus metrics, computed at scrape time from the orchestrator's SQLite state.

The tables belong to other subsystems (the gateway's usage ledger, the scheduler's runs, the
inboxes, the event log); each owner provides the reader, which reads defensively and incrementally.
Check-in figures (memory, whether an agent is checking in) come from the health board.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from orchestrator.broker.inbox import queue_depths
from orchestrator.events import EventReader, EventType
from orchestrator.fleet_view import FleetView
from orchestrator.gateway.ledger import LedgerReader
from orchestrator.health import HealthBoard
from orchestrator.scheduler.runs import RunKey, RunReader
from orchestrator.state.db import Database

HEARTBEAT_OUTCOMES = {
    EventType.HEARTBEAT_RUN.value: "run",
    EventType.HEARTBEAT_IDLE.value: "idle",
    EventType.HEARTBEAT_SKIPPED.value: "skipped",
}
RESTARTED = EventType.AGENT_RESTARTED.value
Family = CounterMetricFamily | GaugeMetricFamily

__all__ = ["CONTENT_TYPE_LATEST", "FleetCollector", "build_registry", "render"]


class FleetCollector(Collector):
    """Yields the fleet's metrics on every scrape."""

    def __init__(self, db: Database, fleet: FleetView, health: HealthBoard) -> None:
        self._db = db
        self._fleet = fleet
        self._health = health
        self._ledger = LedgerReader()
        self._runs = RunReader()
        self._events = EventReader([*HEARTBEAT_OUTCOMES, RESTARTED])

    def collect(self) -> Iterator[Family]:
        agents = sorted(self._fleet.current().config.agents)
        yield from self._agent_info(agents)
        yield from self._usage(agents)
        events = self._events.read(self._db)
        yield from self._runs_and_heartbeats(agents, events)
        yield from self._queue(agents)
        yield self._restarts(agents, events)

    def _agent_info(self, agents: list[str]) -> Iterator[GaugeMetricFamily]:
        config = self._fleet.current().config
        info = GaugeMetricFamily(
            "flotilla_agent_info", "Agents declared in fleet.yaml", labels=["agent", "role", "model"]
        )
        up = GaugeMetricFamily(
            "flotilla_agent_checking_in", "1 when the agent checked in recently", labels=["agent"]
        )
        memory = GaugeMetricFamily(
            "flotilla_agent_memory_bytes", "Resident memory the agent last reported", labels=["agent"]
        )
        for agent in agents:
            info.add_metric([agent, config.agents[agent].role, config.model_of(agent)], 1)
            up.add_metric([agent], 1 if self._health.is_checking_in(agent) else 0)
            sighting = self._health.last(agent)
            if sighting is not None and sighting.checkin.rss_bytes is not None:
                memory.add_metric([agent], sighting.checkin.rss_bytes)
        yield from (info, up, memory)

    def _usage(self, agents: list[str]) -> Iterator[CounterMetricFamily]:
        totals = self._ledger.read(self._db)
        tokens = CounterMetricFamily(
            "flotilla_llm_tokens", "Tokens through the LLM gateway", labels=["agent", "direction"]
        )
        cost = CounterMetricFamily("flotilla_llm_cost_usd", "Spend through the LLM gateway", labels=["agent"])
        calls = CounterMetricFamily(
            "flotilla_llm_calls", "Calls through the LLM gateway by status", labels=["agent", "status"]
        )
        for agent in sorted(set(agents) | set(totals.tokens)):
            counted = totals.tokens.get(agent, Counter())
            for direction in ("in", "out", "cached"):
                tokens.add_metric([agent, direction], counted[direction])
            cost.add_metric([agent], totals.cost.get(agent, 0.0))
        for (agent, status), n in sorted(totals.calls.items()):
            calls.add_metric([agent, status], n)
        yield from (tokens, cost, calls)

    def _runs_and_heartbeats(
        self, agents: list[str], events: Counter[tuple[str, str]]
    ) -> Iterator[CounterMetricFamily]:
        counts, has_kind = self._runs.read(self._db)
        runs = CounterMetricFamily(
            "flotilla_runs",
            "Run records by kind (turn, tick), trigger and outcome",
            labels=["agent", "kind", "trigger", "outcome"],
        )
        turns = CounterMetricFamily(
            "flotilla_agent_turns", "Agent turns (model-driven runs)", labels=["agent"]
        )
        heartbeats = CounterMetricFamily(
            "flotilla_heartbeats",
            "Heartbeat ticks by outcome (run, idle, skipped)",
            labels=["agent", "outcome"],
        )
        per_agent: Counter[str] = Counter()
        ticks: Counter[tuple[str, str]] = Counter()
        for key, n in sorted(counts.items()):
            runs.add_metric(list(key), n)
            _tally(key, n, per_agent, ticks)
        if not has_kind:
            # Without the scheduler's tick records, count its heartbeat events instead.
            for (agent, event_type), n in events.items():
                if event_type in HEARTBEAT_OUTCOMES:
                    ticks[(agent, HEARTBEAT_OUTCOMES[event_type])] += n
        for agent in sorted(set(agents) | set(per_agent)):
            turns.add_metric([agent], per_agent[agent])
        for agent in sorted(set(agents) | {agent for agent, _ in ticks}):
            for outcome in HEARTBEAT_OUTCOMES.values():
                heartbeats.add_metric([agent, outcome], ticks[(agent, outcome)])
        yield from (runs, turns, heartbeats)

    def _queue(self, agents: list[str]) -> Iterator[GaugeMetricFamily]:
        depths = queue_depths(self._db)
        depth = GaugeMetricFamily(
            "flotilla_inbox_depth",
            "Inbox items waiting, being worked on, or dead-lettered",
            labels=["agent", "state"],
        )
        for agent in sorted(set(agents) | {agent for agent, _ in depths}):
            for state in ("queued", "claimed", "dead"):
                depth.add_metric([agent, state], depths[(agent, state)])
        yield depth

    def _restarts(self, agents: list[str], events: Counter[tuple[str, str]]) -> CounterMetricFamily:
        restarts = CounterMetricFamily(
            "flotilla_agent_restarts", "Restarts by the supervisor", labels=["agent"]
        )
        restarted = {agent for agent, kind in events if kind == RESTARTED}
        for agent in sorted(set(agents) | restarted):
            restarts.add_metric([agent], events[(agent, RESTARTED)])
        return restarts


def _tally(key: RunKey, n: int, turns: Counter[str], ticks: Counter[tuple[str, str]]) -> None:
    agent, kind, _, outcome = key
    if kind == "tick":
        ticks[(agent, outcome)] += n
    else:
        turns[agent] += n


def build_registry(db: Database, fleet: FleetView, health: HealthBoard) -> CollectorRegistry:
    """A registry of its own, so metrics of other code in the process never leak in (or collide)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(db, fleet, health))
    return registry


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)

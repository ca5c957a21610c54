"""Prometheus metrics, computed at scrape time from the orchestrator's SQLite state.

The tables belong to other subsystems (the gateway's usage ledger, the scheduler's runs, the
inboxes, the event log); each owner provides the reader, which reads defensively and incrementally. Check-in
figures (memory, whether an agent is checking in) come from the health board. Latency
histograms and budget gauges have collectors of their own (`orchestrator.telemetry`), and the
orchestrator's own process is described by the standard `process_*` metrics.

Each family counts one kind of thing once, and its label values never overlap, so that a sum
over any label is a true total: turns (an agent working an item) and heartbeat ticks (the
scheduler's decision, whose outcome `run` made a turn) are separate families, and tokens are
split into uncached input, cached input and output. The list is in docs/metrics.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from orchestrator.broker import queue_depths
from orchestrator.egress.metrics import HttpRequestCollector
from orchestrator.events import EventReader, EventType
from orchestrator.fleet.view import FleetView
from orchestrator.gateway.cooldown import ModelCooldown
from orchestrator.gateway.cooldown_metrics import CooldownCollector
from orchestrator.gateway.ledger import LedgerReader
from orchestrator.hooks.store import hook_counts
from orchestrator.lifecycle import DesiredStates
from orchestrator.running_agents.health import HealthBoard
from orchestrator.scheduler.runs import RunReader
from orchestrator.state.db import Database
from orchestrator.telemetry.budget_gauges import BudgetCollector
from orchestrator.telemetry.histograms import LatencyCollector

HEARTBEAT_OUTCOMES = ("run", "idle", "skipped")
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
        self._events = EventReader([RESTARTED])

    def collect(self) -> Iterator[Family]:
        agents = sorted(self._fleet.current().config.agents)
        yield from self._agent_info(agents)
        yield from self._usage(agents)
        events = self._events.read(self._db)
        yield from self._run_counts(agents)
        yield from self._queue(agents)
        yield self._restarts(agents, events)
        yield self._hooks()

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
            "flotilla_llm_tokens",
            "Tokens through the LLM gateway by type: input (prompt tokens not read from the provider's "
            "cache), input_cached (prompt tokens read from it) and output; the types do not overlap",
            labels=["agent", "type"],
        )
        cost = CounterMetricFamily("flotilla_llm_cost_usd", "Spend through the LLM gateway", labels=["agent"])
        calls = CounterMetricFamily(
            "flotilla_llm_calls", "Calls through the LLM gateway by status", labels=["agent", "status"]
        )
        for agent in sorted(set(agents) | set(totals.tokens)):
            counted = totals.tokens.get(agent, Counter())
            cached = min(counted["cached"], counted["in"])
            tokens.add_metric([agent, "input"], counted["in"] - cached)
            tokens.add_metric([agent, "input_cached"], cached)
            tokens.add_metric([agent, "output"], counted["out"])
            cost.add_metric([agent], totals.cost.get(agent, 0.0))
        for (agent, status), n in sorted(totals.calls.items()):
            calls.add_metric([agent, status], n)
        yield from (tokens, cost, calls)

    def _run_counts(self, agents: list[str]) -> Iterator[CounterMetricFamily]:
        counts, _ = self._runs.read(self._db)
        turns = CounterMetricFamily(
            "flotilla_turns",
            "Agent turns (the agent worked an item) by trigger and outcome",
            labels=["agent", "trigger", "outcome"],
        )
        ticks = CounterMetricFamily(
            "flotilla_heartbeats",
            "Heartbeat ticks by outcome: run (it made a turn, counted in flotilla_turns_total with "
            "trigger heartbeat), idle (nothing to do) or skipped",
            labels=["agent", "outcome"],
        )
        notifications = CounterMetricFamily(
            "flotilla_notifications",
            "Notifications to channels by trigger (tool, rule) and outcome (sent, failed after every attempt)",
            labels=["agent", "trigger", "outcome"],
        )
        tick_counts: Counter[tuple[str, str]] = Counter()
        for (agent, kind, trigger, outcome), n in sorted(counts.items()):
            if kind == "tick":
                tick_counts[(agent, outcome)] += n
            elif kind == "notify":
                notifications.add_metric([agent, trigger, outcome], n)
            else:
                turns.add_metric([agent, trigger, outcome], n)
        for agent in sorted(set(agents) | {agent for agent, _ in tick_counts}):
            for outcome in HEARTBEAT_OUTCOMES:
                ticks.add_metric([agent, outcome], tick_counts[(agent, outcome)])
        yield from (turns, ticks, notifications)

    def _hooks(self) -> CounterMetricFamily:
        requests = CounterMetricFamily(
            "flotilla_hook_requests",
            "Requests to inbound hooks by outcome: accepted, bad_signature, stale, replayed, "
            "too_large, rate_limited, unavailable",
            labels=["hook", "outcome"],
        )
        for (hook, outcome), n in sorted(hook_counts(self._db).items()):
            requests.add_metric([hook, outcome], n)
        return requests

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


class AwakeCollector(Collector):
    """Which agents sleep, and how many with work wait for a place among the awake ones."""

    def __init__(self, db: Database, fleet: FleetView, waiting: Callable[[], list[str]]) -> None:
        self._desired = DesiredStates(db)
        self._fleet = fleet
        self._waiting = waiting

    def collect(self) -> Iterator[GaugeMetricFamily]:
        agents = sorted(self._fleet.current().config.agents)
        sleeping = self._desired.asleep()
        asleep = GaugeMetricFamily(
            "flotilla_agent_asleep",
            "1 while the agent sleeps (its unit stopped until it has work)",
            labels=["agent"],
        )
        for agent in agents:
            asleep.add_metric([agent], 1 if agent in sleeping else 0)
        waiting = self._waiting()
        queue = GaugeMetricFamily(
            "flotilla_wake_queue_length", "Agents with work waiting for a place among the awake (max_awake)"
        )
        queue.add_metric([], len(waiting))
        awake = GaugeMetricFamily("flotilla_agents_awake", "Agents of the fleet that are not asleep")
        awake.add_metric([], sum(1 for agent in agents if agent not in sleeping))
        yield from (asleep, queue, awake)


def build_registry(
    db: Database,
    fleet: FleetView,
    health: HealthBoard,
    waiting: Callable[[], list[str]] = list,
    cooling: Callable[[], list[ModelCooldown]] = list,
) -> CollectorRegistry:
    """A registry of its own, so metrics of other code in the process never leak in (or collide).
    `waiting`: the agents waiting to be woken, next first; `cooling`: the models cooling down."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(db, fleet, health))
    registry.register(AwakeCollector(db, fleet, waiting))
    registry.register(LatencyCollector(db))
    registry.register(BudgetCollector(db, lambda: fleet.current().config))
    registry.register(HttpRequestCollector(db))
    registry.register(CooldownCollector(fleet, cooling))
    ProcessCollector(registry=registry)
    return registry


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)

"""Prometheus metrics, computed at scrape time from the orchestrator's SQLite state.

The tables belong to other subsystems (the gateway's usage ledger, the scheduler's runs, the
inboxes, the event log). A table or column that does not exist (yet) is skipped, so a scrape
never fails because one subsystem is absent. Event-derived counters are kept incrementally:
each scrape reads only the events stored since the previous one.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from orchestrator.events import EventType
from orchestrator.services import Services
from orchestrator.state.db import Database

HEARTBEAT_OUTCOMES = {
    EventType.HEARTBEAT_RUN.value: "run",
    EventType.HEARTBEAT_IDLE.value: "idle",
    EventType.HEARTBEAT_SKIPPED.value: "skipped",
}
COUNTED_EVENTS = frozenset({*HEARTBEAT_OUTCOMES, EventType.AGENT_RESTARTED.value})

__all__ = ["CONTENT_TYPE_LATEST", "FleetCollector", "build_registry", "render"]


def columns_of(db: Database, table: str) -> set[str]:
    """The table's column names; empty when it does not exist."""
    try:
        rows = db.query(f"PRAGMA table_info({table})")
    except sqlite3.Error:
        return set()
    return {str(row["name"]) for row in rows}


def _safe_query(db: Database, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
    try:
        return db.query(sql, list(params))
    except sqlite3.OperationalError:
        return []


class _EventCounts:
    """Per-(agent, type) counts of selected events, advanced from the last sequence number seen."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_seq = 0
        self._counts: Counter[tuple[str, str]] = Counter()

    def refresh(self, db: Database) -> Counter[tuple[str, str]]:
        with self._lock:
            marks = ", ".join("?" for _ in COUNTED_EVENTS)
            rows = _safe_query(
                db,
                f"SELECT agent, type, COUNT(*) AS n, MAX(seq) AS last FROM events "
                f"WHERE seq > ? AND type IN ({marks}) AND agent IS NOT NULL GROUP BY agent, type",
                [self._last_seq, *sorted(COUNTED_EVENTS)],
            )
            top = _safe_query(db, "SELECT COALESCE(MAX(seq), 0) AS seq FROM events")
            for row in rows:
                self._counts[(str(row["agent"]), str(row["type"]))] += int(row["n"])
            if top:
                self._last_seq = max(self._last_seq, int(top[0]["seq"]))
            return Counter(self._counts)


class FleetCollector(Collector):
    """Yields the fleet's metrics on every scrape; holds no state but the event counters."""

    def __init__(self, services: Services) -> None:
        self._services = services
        self._events = _EventCounts()

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        agents = sorted(self._services.fleet.config.agents)
        yield from self._agent_info(agents)
        yield from self._usage(agents)
        yield from self._runs(agents)
        yield from self._queue(agents)
        yield from self._restarts(agents)

    # -- fleet shape and check-ins ------------------------------------------------------------

    def _agent_info(self, agents: list[str]) -> Iterator[GaugeMetricFamily]:
        config = self._services.fleet.config
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
            up.add_metric([agent], 1 if self._services.health.is_checking_in(agent) else 0)
            sighting = self._services.health.last(agent)
            if sighting is not None and sighting.checkin.rss_bytes is not None:
                memory.add_metric([agent], sighting.checkin.rss_bytes)
        yield info
        yield up
        yield memory

    # -- gateway usage ledger -----------------------------------------------------------------

    def _usage(self, agents: list[str]) -> Iterator[CounterMetricFamily]:
        tokens = CounterMetricFamily(
            "flotilla_llm_tokens", "Tokens through the LLM gateway", labels=["agent", "direction"]
        )
        cost = CounterMetricFamily("flotilla_llm_cost_usd", "Spend through the LLM gateway", labels=["agent"])
        calls = CounterMetricFamily(
            "flotilla_llm_calls", "Calls through the LLM gateway", labels=["agent", "status"]
        )
        db = self._services.db
        cols = columns_of(db, "gateway_usage")
        totals: dict[str, dict[str, float]] = {a: {} for a in agents}
        if {"agent", "tokens_in", "tokens_out", "cost_usd"} <= cols:
            cached = "SUM(cached_tokens)" if "cached_tokens" in cols else "0"
            settled = "WHERE status != 'reserved'" if "status" in cols else ""
            for row in _safe_query(
                db,
                f"SELECT agent, SUM(tokens_in) AS t_in, SUM(tokens_out) AS t_out, {cached} AS t_cached, "
                f"SUM(cost_usd) AS cost FROM gateway_usage {settled} GROUP BY agent",
            ):
                totals[str(row["agent"])] = {
                    "in": row["t_in"] or 0,
                    "out": row["t_out"] or 0,
                    "cached": row["t_cached"] or 0,
                    "cost": row["cost"] or 0.0,
                }
        if {"agent", "status"} <= cols:
            for row in _safe_query(
                db, "SELECT agent, status, COUNT(*) AS n FROM gateway_usage GROUP BY agent, status"
            ):
                calls.add_metric([str(row["agent"]), str(row["status"])], row["n"])
        for agent, figures in sorted(totals.items()):
            for direction in ("in", "out", "cached"):
                tokens.add_metric([agent, direction], figures.get(direction, 0))
            cost.add_metric([agent], figures.get("cost", 0.0))
        yield tokens
        yield cost
        yield calls

    # -- scheduler runs: agent turns and heartbeat ticks ---------------------------------------

    def _runs(self, agents: list[str]) -> Iterator[CounterMetricFamily]:
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
        db = self._services.db
        cols = columns_of(db, "runs")
        per_agent: Counter[str] = Counter({a: 0 for a in agents})
        ticks: Counter[tuple[str, str]] = Counter()
        if "agent" in cols:
            select = {key: key if key in cols else "''" for key in ("kind", "trigger", "outcome")}
            for row in _safe_query(
                db,
                f"SELECT agent, {select['kind']} AS k, {select['trigger']} AS t, {select['outcome']} AS o, "
                "COUNT(*) AS n FROM runs GROUP BY agent, k, t, o",
            ):
                agent, kind, outcome, n = (
                    str(row["agent"]),
                    str(row["k"] or ""),
                    str(row["o"] or ""),
                    int(row["n"]),
                )
                runs.add_metric([agent, kind, str(row["t"] or ""), outcome], n)
                if kind == "tick":
                    ticks[(agent, outcome)] += n
                else:
                    per_agent[agent] += n
        if "kind" not in cols:
            # Without the scheduler's tick records, count the heartbeat events instead.
            counts = self._events.refresh(self._services.db)
            for (agent, event_type), n in counts.items():
                if event_type in HEARTBEAT_OUTCOMES:
                    ticks[(agent, HEARTBEAT_OUTCOMES[event_type])] += n
        for agent, count in sorted(per_agent.items()):
            turns.add_metric([agent], count)
        for agent in sorted(set(agents) | {agent for agent, _ in ticks}):
            for outcome in HEARTBEAT_OUTCOMES.values():
                heartbeats.add_metric([agent, outcome], ticks[(agent, outcome)])
        yield runs
        yield turns
        yield heartbeats

    # -- inboxes -------------------------------------------------------------------------------

    def _queue(self, agents: list[str]) -> Iterator[GaugeMetricFamily]:
        depth = GaugeMetricFamily(
            "flotilla_inbox_depth", "Inbox items waiting or being worked on", labels=["agent", "state"]
        )
        db = self._services.db
        counts: dict[tuple[str, str], int] = {(a, s): 0 for a in agents for s in ("queued", "claimed")}
        if {"agent", "state"} <= columns_of(db, "inbox"):
            for row in _safe_query(
                db,
                "SELECT agent, state, COUNT(*) AS n FROM inbox "
                "WHERE state IN ('queued', 'claimed') GROUP BY agent, state",
            ):
                counts[(str(row["agent"]), str(row["state"]))] = int(row["n"])
        for (agent, state), n in sorted(counts.items()):
            depth.add_metric([agent, state], n)
        yield depth

    # -- events --------------------------------------------------------------------------------

    def _restarts(self, agents: list[str]) -> Iterator[CounterMetricFamily]:
        counts = self._events.refresh(self._services.db)
        restarts = CounterMetricFamily(
            "flotilla_agent_restarts", "Restarts by the supervisor", labels=["agent"]
        )
        restarted = EventType.AGENT_RESTARTED.value
        for agent in sorted(set(agents) | {agent for agent, kind in counts if kind == restarted}):
            restarts.add_metric([agent], counts[(agent, restarted)])
        yield restarts


def build_registry(services: Services) -> CollectorRegistry:
    """A registry of its own, so metrics of other code in the process never leak in (or collide)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(services))
    return registry


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)

"""Latency histograms for Prometheus, computed from the state the subsystems already keep.

Model calls come from the gateway's usage ledger (latency of each settled call), turns from the
run records, asks from the broker's message log. Each reader advances a cursor between scrapes
so that a scrape costs only the rows written since the previous one, like the counters next to
it. A table that does not exist (yet) reads as empty: the subsystem owning it may not be running.
"""

from __future__ import annotations

import bisect
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector

from orchestrator.broker import asks_finished_between
from orchestrator.gateway.ledger import (
    LatencyCounts,
    first_reserved_id,
    ledger_top_id,
    settled_latency_counts,
)
from orchestrator.scheduler.runs import turn_durations_after
from orchestrator.state.db import Database

MODEL_CALL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
WORK_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
# An ask's finish time is written by the thread that finished it; reading only asks finished a
# little while ago keeps a slow writer's row from slipping behind the cursor.
ASK_SETTLE = timedelta(seconds=2)
Labels = tuple[str, ...]


@dataclass
class Series:
    """One label set's observations: count per bucket (not cumulative), sum and count."""

    per_bucket: list[int]
    total: float = 0.0
    count: int = 0


@dataclass
class Histogram:
    bounds: tuple[float, ...]
    series: dict[Labels, Series] = field(default_factory=dict)

    def observe(self, labels: Labels, value: float) -> None:
        found = self.series.get(labels)
        if found is None:
            found = self.series[labels] = Series([0] * len(self.bounds))
        index = bisect.bisect_left(self.bounds, value)
        if index < len(self.bounds):
            found.per_bucket[index] += 1
        found.total += value
        found.count += 1

    def add_counts(self, labels: Labels, at_most: tuple[int, ...], count: int, total: float) -> None:
        """Fold in observations already counted per bound (cumulative counts, as SQL gives them)."""
        found = self.series.get(labels)
        if found is None:
            found = self.series[labels] = Series([0] * len(self.bounds))
        below = 0
        for index, cumulative in enumerate(at_most):
            found.per_bucket[index] += cumulative - below
            below = cumulative
        found.total += total
        found.count += count

    def copy(self) -> Histogram:
        return Histogram(
            self.bounds,
            {key: Series(list(s.per_bucket), s.total, s.count) for key, s in self.series.items()},
        )

    def family(self, name: str, documentation: str, label_names: list[str]) -> HistogramMetricFamily:
        family = HistogramMetricFamily(name, documentation, labels=label_names)
        for labels, series in sorted(self.series.items()):
            cumulative, buckets = 0, []
            for bound, n in zip(self.bounds, series.per_bucket, strict=True):
                cumulative += n
                buckets.append((_bound_text(bound), cumulative))
            buckets.append(("+Inf", series.count))
            family.add_metric(list(labels), buckets, sum_value=series.total)
        return family


def _bound_text(bound: float) -> str:
    return repr(float(bound))


class ModelCallLatency:
    """Seconds per settled gateway call by (agent, model). Calls in flight are left for later."""

    def __init__(self) -> None:
        self._settled = Histogram(MODEL_CALL_BUCKETS)
        self._settled_upto = 0

    def read(self, db: Database) -> Histogram:
        try:
            top = ledger_top_id(db)
            open_id = first_reserved_id(db, self._settled_upto, top)
            settled = top if open_id is None else open_id - 1
            if settled > self._settled_upto:
                _add(
                    self._settled, settled_latency_counts(db, self._settled_upto, settled, MODEL_CALL_BUCKETS)
                )
                self._settled_upto = settled
            current = self._settled.copy()
            if top > self._settled_upto:  # settled after a call still in flight: counted on a copy
                _add(current, settled_latency_counts(db, self._settled_upto, top, MODEL_CALL_BUCKETS))
            return current
        except sqlite3.OperationalError:
            return self._settled.copy()


def _add(histogram: Histogram, counted: Iterable[LatencyCounts]) -> None:
    for counts in counted:
        histogram.add_counts((counts.agent, counts.model), counts.at_most, counts.count, counts.total_s)


class TurnDuration:
    """Seconds per agent turn by (agent, trigger)."""

    def __init__(self) -> None:
        self._histogram = Histogram(WORK_BUCKETS)
        self._upto = 0

    def read(self, db: Database) -> Histogram:
        try:
            self._upto, turns = turn_durations_after(db, self._upto)
        except sqlite3.OperationalError:
            turns = []
        for agent, trigger, seconds in turns:
            self._histogram.observe((agent, trigger), seconds)
        return self._histogram.copy()


class AskDuration:
    """Seconds from an ask to its outcome, by (the agent asked, outcome)."""

    def __init__(self, settle: timedelta = ASK_SETTLE) -> None:
        self._histogram = Histogram(WORK_BUCKETS)
        self._cursor: tuple[str, int] = ("", 0)
        self._settle = settle

    def read(self, db: Database) -> Histogram:
        before = datetime.now(UTC) - self._settle
        try:
            while True:
                asks = asks_finished_between(db, self._cursor, before)
                for ask in asks:
                    self._histogram.observe((ask.recipient, ask.state.value), ask.seconds)
                if not asks:
                    break
                self._cursor = asks[-1].cursor
        except sqlite3.OperationalError:
            pass
        return self._histogram.copy()


class LatencyCollector(Collector):
    """Histograms of model calls, turns and asks."""

    def __init__(self, db: Database, ask_settle: timedelta = ASK_SETTLE) -> None:
        self._db = db
        self._lock = threading.Lock()
        self._calls = ModelCallLatency()
        self._turns = TurnDuration()
        self._asks = AskDuration(ask_settle)

    def collect(self) -> Iterator[HistogramMetricFamily]:
        with self._lock:
            calls = self._calls.read(self._db)
            turns = self._turns.read(self._db)
            asks = self._asks.read(self._db)
        yield calls.family(
            "flotilla_llm_call_duration_seconds",
            "Time the upstream model took per call through the gateway",
            ["agent", "model"],
        )
        yield turns.family(
            "flotilla_turn_duration_seconds", "Time an agent turn took, start to finish", ["agent", "trigger"]
        )
        yield asks.family(
            "flotilla_ask_duration_seconds",
            "Time from an ask between agents to its outcome, by the agent asked",
            ["agent", "outcome"],
        )

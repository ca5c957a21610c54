"""Prometheus counters of the requests made for agents, read from their events at scrape time.

A refused request is counted under host `-`: the host is the agent's choice and must not grow
the metric's label set; a sent one is counted under its host, which the policy allowed.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from orchestrator.egress.records import HTTP_REFUSED, HTTP_REQUESTED
from orchestrator.events import new_events_of
from orchestrator.state.db import Database

REFUSED_HOST = "-"


class HttpRequestCollector(Collector):
    """flotilla_http_requests_total{agent,host,outcome} and flotilla_http_response_bytes_total."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._lock = threading.Lock()
        self._upto = 0
        self._requests: Counter[tuple[str, str, str]] = Counter()
        self._bytes: Counter[tuple[str, str]] = Counter()

    def collect(self) -> Iterator[CounterMetricFamily]:
        self._read()
        requests = CounterMetricFamily(
            "flotilla_http_requests",
            "http_request calls made by the orchestrator for agents, by outcome: ok (an answer came), "
            "failed (no answer: connection, time) or refused (outside the policy; host -)",
            labels=["agent", "host", "outcome"],
        )
        received = CounterMetricFamily(
            "flotilla_http_response_bytes", "Response body bytes read for agents", labels=["agent", "host"]
        )
        with self._lock:
            for (agent, host, outcome), n in sorted(self._requests.items()):
                requests.add_metric([agent, host, outcome], n)
            for (agent, host), n in sorted(self._bytes.items()):
                received.add_metric([agent, host], n)
        yield from (requests, received)

    def _read(self) -> None:
        with self._lock:
            events, self._upto = new_events_of(self._db, self._upto, (HTTP_REQUESTED, HTTP_REFUSED))
            for event in events:
                agent = str(event.agent)
                data = event.data
                if event.type == HTTP_REFUSED:
                    self._requests[(agent, REFUSED_HOST, "refused")] += 1
                    continue
                host = str(data.get("host") or REFUSED_HOST)
                self._requests[(agent, host, "ok" if data.get("ok") else "failed")] += 1
                self._bytes[(agent, host)] += int(data.get("bytes") or 0)

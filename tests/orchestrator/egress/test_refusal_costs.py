"""Refused calls are paid for: through the real HTTP API an agent's refused http_request calls are
charged to its event rate (429 past it, one limit event per episode), and a flood of refusals
leaves the orchestrator's log within its documented bound."""

from __future__ import annotations

import logging
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.egress import HTTP_REFUSED
from orchestrator.events import EventType
from orchestrator.logging_setup import LOG_BACKUPS, MAX_MESSAGE_CHARS, configure_logging
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import build_services

FLOOD = 400
LONG_URL = "https://not-allowed.example/" + "x" * 7000


def fleet(root: Path, events_rate: str) -> Services:
    (root / "fleet.yaml").write_text(
        "version: 1\nfleet: refusals\nagents:\n  mallory:\n    role: tries things\n    tools:\n"
        '      http: {allow: ["https://api.example.com/"]}\n'
        "      exec: {timeout_s: 10}\n"
        f"limits:\n  rates:\n    events: {events_rate}\n"
    )
    services = build_services(load_fleet(root / "fleet.yaml"), FakeBackend())
    services.manager.apply()
    return services


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root, httpx_logger = logging.getLogger(), logging.getLogger("httpx")
    saved = (list(root.handlers), root.level, httpx_logger.level)
    yield
    for handler in root.handlers:
        handler.close()
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])
    httpx_logger.setLevel(saved[2])


def flood(services: Services, count: int, call: dict[str, Any] | None = None) -> Counter[int]:
    token = services.tokens.mint("mallory")
    call = call or {"name": "http_request", "arguments": {"url": LONG_URL}}
    statuses: Counter[int] = Counter()
    with serve_app(create_app(services)) as base, httpx.Client(timeout=30) as client:
        for _ in range(count):
            answer = client.post(
                f"{base}/agent/v1/tools/call", json=call, headers={"authorization": f"Bearer {token}"}
            )
            statuses[answer.status_code] += 1
    return statuses


def test_refused_requests_are_charged_to_the_agents_event_rate(restore_logging: None) -> None:
    with tempfile.TemporaryDirectory(prefix="flt-refusals-") as tmp:
        services = fleet(Path(tmp), "20/h")
        statuses = flood(services, FLOOD)
        refused = services.events.recent(1000, "mallory", types=[HTTP_REFUSED])
        limits = services.events.recent(1000, "mallory", types=[str(EventType.LIMIT_EXCEEDED)])
        services.db.close()
    assert statuses == Counter({403: 20, 429: FLOOD - 20})
    assert len(refused) == 20
    assert len(limits) == 1 and limits[0].data["limit"] == "events"


@pytest.mark.parametrize(
    "call",
    [
        # The in-memory test backend has no sandbox: exec is refused there.
        {"name": "exec", "arguments": {"command": "echo hi"}},
        {"name": "notify", "arguments": {"channel": "nowhere", "text": "hi"}},
    ],
)
def test_refused_exec_and_notify_calls_are_charged_too(restore_logging: None, call: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory(prefix="flt-refusals-") as tmp:
        services = fleet(Path(tmp), "20/h")
        statuses = flood(services, 30, call)
        limits = services.events.recent(1000, "mallory", types=[str(EventType.LIMIT_EXCEEDED)])
        services.db.close()
    assert statuses == Counter({403: 20, 429: 10})
    assert len(limits) == 1


def test_a_flood_of_refusals_keeps_the_log_within_its_bound(restore_logging: None) -> None:
    file_bytes = 64 * 1024
    with tempfile.TemporaryDirectory(prefix="flt-refusal-log-") as tmp:
        log = Path(tmp) / "orchestrator.log"
        configure_logging(level="info", file=log, file_bytes=file_bytes)
        (Path(tmp) / "fleet").mkdir()
        services = fleet(Path(tmp) / "fleet", "100000/s")
        statuses = flood(services, FLOOD)
        logging.getLogger("orchestrator.test").warning("agent text: %s", "y" * 50_000)
        services.db.close()
        files = sorted(Path(tmp).glob("orchestrator.log*"))
        sizes = [file.stat().st_size for file in files]
        lines = [line for file in files for line in file.read_text().splitlines()]
    assert statuses == Counter({403: FLOOD})
    assert len(files) == LOG_BACKUPS + 1  # it rotated, and kept only its backups
    assert sum(sizes) <= (LOG_BACKUPS + 1) * file_bytes
    assert max(len(line) for line in lines) <= MAX_MESSAGE_CHARS + 200
    assert any("[line cut at" in line for line in lines)
    assert not any("x" * 600 in line for line in lines)  # a refusal quotes a short prefix only

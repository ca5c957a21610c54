"""What is stored (events, run records) holds no secret value of the fleet in force: the fleet
view hands its redaction over when it changes, after an apply or a secret read for the first time."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from orchestrator.config.loader import load_fleet
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.wiring import build_services

FLEET = "version: 1\nfleet: hidden\nsecrets:\n  late: {file: late.txt}\nagents:\n  alpha:\n    role: first\n"
LATE = "late-value-7d41c0ffee"
APPLIED = "applied-value-93be11ef"
AT = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    built = build_services(load_fleet(tmp_path / "fleet.yaml"), FakeBackend())
    yield built
    built.db.close()


def stored_texts(services: Services, said: str) -> tuple[str, str]:
    """An event and a tick record that say `said`, as they were stored."""
    services.events.publish("test.said", agent="alpha", said=said)
    services.scheduler.runs.add_tick(
        run_id=said, agent="alpha", trigger="manual", outcome="idle", detail=said,
        scheduled_at=AT, started_at=AT, finished_at=AT,
    )  # fmt: skip
    event = services.events.recent(1, agent="alpha")[0]
    run = services.scheduler.runs.recent("alpha", limit=1)[0]
    return str(event.data["said"]), run.detail


def test_a_secret_read_after_the_start_is_taken_out_of_what_is_stored(
    services: Services, tmp_path: Path
) -> None:
    assert stored_texts(services, f"echo {LATE}") == (f"echo {LATE}",) * 2  # not readable yet
    (tmp_path / "late.txt").write_text(LATE)

    assert services.fleet_view.secrets().value("late") == LATE

    assert stored_texts(services, f"echo {LATE}") == ("echo {{secret:late}}",) * 2


def test_an_applied_fleet_brings_its_secrets_to_what_is_stored(services: Services, tmp_path: Path) -> None:
    (tmp_path / "applied.txt").write_text(APPLIED)
    changed = FLEET.replace("secrets:\n", "secrets:\n  applied: {file: applied.txt}\n")
    (tmp_path / "fleet.yaml").write_text(changed)

    services.fleet_view.replace(load_fleet(tmp_path / "fleet.yaml"))

    assert stored_texts(services, f"got {APPLIED}") == ("got {{secret:applied}}",) * 2

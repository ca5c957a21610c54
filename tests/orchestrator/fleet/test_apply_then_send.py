"""A message sent right after `apply` switched an agent's model is answered, never refused by the
gateway with "may not use model" (process runtime, a fake provider on loopback)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.testing.cli import free_port, run_flotilla
from orchestrator.testing.fake_upstream import FakeUpstream

FLEET = """\
version: 1
fleet: switch
llm:
  default_model: {model}
  providers:
    fake:
      base_url: {url}
      api_key_env: FLT_POLISH_FAKE_KEY
agents:
  writer:
    role: writes
"""


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    upstream = FakeUpstream()
    env = {**os.environ, "FLT_POLISH_FAKE_KEY": "sk-fake"}
    with upstream.serve() as url:
        (tmp_path / "fleet.yaml").write_text(FLEET.format(model="test", url=url))
        try:
            started = run_flotilla(
                tmp_path, "up", "-d", "--runtime", "process", "--port", str(free_port()), env=env
            )
            assert started.returncode == 0, started.stdout + started.stderr
            yield tmp_path, url
        finally:
            run_flotilla(tmp_path, "down", "-v")


def test_send_at_once_after_apply_switched_the_model_both_ways(running: tuple[Path, str]) -> None:
    folder, url = running
    first = run_flotilla(folder, "send", "writer", "hello before")
    assert first.returncode == 0, first.stdout + first.stderr
    for model in ("fake:fake-model", "test"):
        (folder / "fleet.yaml").write_text(FLEET.format(model=model, url=url))
        applied = run_flotilla(folder, "apply")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        sent = run_flotilla(folder, "send", "writer", f"hello on {model}")
        assert sent.returncode == 0, sent.stdout + sent.stderr
        assert "may not use model" not in sent.stdout + sent.stderr


def test_the_replaced_fleet_serves_turns_under_way_for_a_bounded_time(tmp_path: Path) -> None:
    from orchestrator.config.loader import load_fleet
    from orchestrator.fleet.view import HANDOVER_S, FleetView

    (tmp_path / "fleet.yaml").write_text(FLEET.format(model="test", url="http://127.0.0.1:9/v1"))
    before = load_fleet(tmp_path / "fleet.yaml")
    (tmp_path / "fleet.yaml").write_text(FLEET.format(model="fake:other", url="http://127.0.0.1:9/v1"))
    after = load_fleet(tmp_path / "fleet.yaml")
    now = [100.0]
    view = FleetView(before, clock=lambda: now[0])
    assert view.previous() is None
    view.replace(after)
    assert view.previous() is before
    now[0] += HANDOVER_S + 1
    assert view.previous() is None


def test_adding_alerts_is_reported_as_a_change_in_text_and_json(running: tuple[Path, str]) -> None:
    folder, url = running
    alerts = (
        "alerts:\n  webhooks:\n    ops: {url: 'http://127.0.0.1:9/hook'}\n"
        "  rules:\n    - when: event\n      event: no.such.event\n"
    )
    (folder / "fleet.yaml").write_text(FLEET.format(model="test", url=url) + alerts)
    dry = run_flotilla(folder, "apply", "--dry-run")
    assert dry.returncode == 5, dry.stdout + dry.stderr
    assert "* update   (fleet)              alerts (in force at once)" in dry.stdout
    applied = run_flotilla(folder, "apply", "--json")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    import json

    plan = json.loads(applied.stdout)
    assert plan["changed"] is True and plan["fleet_changes"] == ["alerts"]
    again = run_flotilla(folder, "apply", "--dry-run")
    assert again.returncode == 0 and "nothing to change" in again.stdout

"""The `limits:` section of fleet.yaml: defaults, units, floors and unknown fields."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.config.fleet import ConfigError
from orchestrator.config.loader import load_fleet

LIMITED = """\
version: 1
fleet: demo
limits:
  payload: 512k
  message: 100
  delivery_attempts: 0
  colour: blue
agents:
  alpha:
    role: first
"""


def test_limits_are_validated_with_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(LIMITED)
    with pytest.raises(ConfigError) as caught:
        load_fleet(path)
    found = sorted(str(problem) for problem in caught.value.problems)
    assert any(f"{path}:5: limits.message" in p and "below the floor of 1k" in p for p in found), found
    assert any(f"{path}:6: limits.delivery_attempts" in p for p in found), found
    assert any(f"{path}:7: limits.colour" in p for p in found), found
    path.write_text(LIMITED.replace("  message: 100\n  delivery_attempts: 0\n  colour: blue\n", ""))
    limits = load_fleet(path).config.limits
    assert limits.bytes_of("payload") == 512 * 1024
    assert limits.bytes_of("message") == 1024 * 1024 and limits.delivery_attempts == 5


FAIR_SHARE = """\
version: 1
fleet: demo
limits:
  rates:
    events: lots
    pair: 10/fortnight
    pair_bytes: 2m/h
    pending: 0
  retention:
    every: 0.1s
    events: {age: 2d, size: 1k}
    usage_detail: 7d
agents:
  alpha:
    role: first
"""


def test_rates_and_retention_are_validated_with_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(FAIR_SHARE)
    with pytest.raises(ConfigError) as caught:
        load_fleet(path)
    found = "\n".join(str(problem) for problem in caught.value.problems)
    for line, field in (
        (5, "limits.rates.events"),
        (6, "limits.rates.pair"),
        (8, "limits.rates.pending"),
        (10, "limits.retention.every"),
        (11, "limits.retention.events.size"),
        (12, "limits.retention.usage_detail"),
    ):
        assert f"{path}:{line}: {field}" in found, found
    assert "use COUNT/PERIOD" in found and "shorter than a budget month" in found


def test_rates_and_retention_have_defaults_and_units(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(
        "version: 1\nfleet: demo\nlimits:\n  rates: {pair_bytes: 2m/h, asks: 5/s}\nagents:\n  a:\n    role: r\n"
    )
    limits = load_fleet(path).config.limits
    assert limits.rates.rate("pair_bytes").amount == 2 * 1024 * 1024
    assert limits.rates.rate("pair_bytes").period_s == 3600
    assert limits.rates.rate("asks").per_second == 5
    assert limits.rates.rate("events").amount == 120 and limits.rates.pending == 20
    assert limits.retention.per_agent_bytes == 15 * 1024 * 1024 and limits.retention.every_s == 60

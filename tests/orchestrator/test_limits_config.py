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

"""Both context strategies on the benchmark's scripted session (shortened): the prompt's prefix
is reused at least 90 % of the time in both (bench/bench_strategies.py measures 300 messages)."""

from __future__ import annotations

import statistics

import pytest

from bench.bench_strategies import _prefix_shares, session


@pytest.mark.parametrize("strategy", ["compact", "checkpoint"])
def test_prefix_reuse_stays_at_or_above_ninety_percent(strategy: str) -> None:
    result = session(strategy, turns=90)
    assert result.requests and statistics.fmean(_prefix_shares(result.requests)) >= 0.90

"""The one backoff every retrying loop uses: doubling, capped, shortened by jitter only."""

from __future__ import annotations

from agent_runtime import Backoff, backoff_delay, nominal_delay


def test_nominal_delays_double_up_to_the_cap() -> None:
    assert [nominal_delay(n, 0.5, 4.0) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert nominal_delay(10_000, 1.0, 60.0) == 60.0


def test_jitter_only_shortens_and_spreads() -> None:
    delays = {round(backoff_delay(3, 1.0, 60.0), 6) for _ in range(50)}
    assert all(3.2 <= delay <= 4.0 for delay in delays)
    assert len(delays) > 10
    assert backoff_delay(3, 1.0, 60.0, rand=lambda: 0.0) == 4.0
    assert backoff_delay(3, 1.0, 60.0, rand=lambda: 1.0) == 4.0 * 0.8


def test_backoff_counts_failures_and_resets() -> None:
    backoff = Backoff(1.0, 8.0, jitter=0.0)
    assert [backoff.next() for _ in range(5)] == [1.0, 2.0, 4.0, 8.0, 8.0]
    backoff.reset()
    assert backoff.next() == 1.0

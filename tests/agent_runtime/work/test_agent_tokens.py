"""Token counting through the gateway: once per distinct text, estimate when it fails."""

from __future__ import annotations

from agent_runtime.protocol import TokenCountResult
from agent_runtime.work.tokens import CachingCounter, EstimateCounter


class Remote:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.down = False

    def __call__(self, texts: list[str]) -> TokenCountResult:
        self.calls.append(texts)
        if self.down:
            raise ConnectionError("gateway down")
        return TokenCountResult(counts=[len(t.split()) for t in texts], tokenizer="cl100k")


def test_each_text_is_counted_once() -> None:
    remote = Remote()
    now = [0.0]
    counter = CachingCounter(remote, (ConnectionError,), clock=lambda: now[0])
    assert counter.count(["a b", "c d e"]) == [2, 3]
    assert counter.count(["a b", "c d e", "f"]) == [2, 3, 1]
    assert remote.calls == [["a b", "c d e"], ["f"]]
    assert counter.tokenizer == "cl100k"


def test_failure_falls_back_to_the_estimate_then_recovers() -> None:
    remote = Remote()
    now = [0.0]
    counter = CachingCounter(remote, (ConnectionError,), retry_after_s=30, clock=lambda: now[0])
    remote.down = True
    assert counter.count(["x" * 40]) == [10]
    assert counter.tokenizer == "estimate"
    counter.count(["y" * 8])
    assert len(remote.calls) == 1  # resting: no call per turn while the gateway is down
    remote.down = False
    now[0] = 31.0
    assert counter.count(["one two"]) == [2]
    assert counter.tokenizer == "cl100k"


def test_estimate_counter() -> None:
    assert EstimateCounter().count(["abcd", "abcde", ""]) == [1, 2, 0]

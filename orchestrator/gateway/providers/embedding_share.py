"""The one thread a local embedding model runs on, shared fairly between agents.

A local model (`wordllama-256`, `multilingual-e5-small`) takes one thread of the orchestrator's,
so it never takes more than one core. Served first come, first served, one agent that sends
many long texts holds that thread for as long as they take (tens of seconds with
multilingual-e5-small) and every other agent's save waits behind it. Here each request is cut
into slices of a few texts, and the thread takes one slice from each waiting agent in turn: an
agent waits for at most one slice of each other agent per slice of its own.

Each agent may use at most `cpu_seconds_per_minute` of the thread's CPU time in any 60 seconds
(measured, not estimated: a text's cost depends on the model and its length). An agent past it
is refused (`EmbeddingCpuExhausted`) before its next slice, and until its use of the last minute
falls under the cap again; the gateway answers that with 429 and the time to wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

EmbedTexts = Callable[[list[str], int], list[list[float]]]
Vectors = list[list[float]]

WINDOW_S = 60.0
# A slice ends once its texts reach this many characters (a single longer text is a slice of
# its own): well under a second of multilingual-e5-small's CPU, a handful of wordllama calls.
SLICE_CHARS = 1000


class EmbeddingCpuExhausted(Exception):
    """An agent used its share of the embedding thread for this minute."""

    def __init__(self, agent: str, model: str, spent_s: float, cap_s: float, retry_after_s: float) -> None:
        self.agent = agent
        self.spent_s = spent_s
        self.cap_s = cap_s
        self.retry_after_s = retry_after_s
        super().__init__(
            f"agent '{agent}' used {spent_s:.1f} s of CPU of the local embedding model {model} in the "
            f"last minute; its cap (llm.embedding.cpu_seconds_per_minute) is {cap_s:g} s: "
            f"retry in {math.ceil(retry_after_s)} s"
        )


def slices_of(texts: list[str], limit: int = SLICE_CHARS) -> deque[list[str]]:
    """`texts` in order, cut into runs of at most `limit` characters (one text at least)."""
    runs: deque[list[str]] = deque()
    size = limit
    for text in texts:
        if size + len(text) > limit:
            runs.append([])
            size = 0
        runs[-1].append(text)
        size += len(text)
    return runs


@dataclass
class _Job:
    agent: str
    slices: deque[list[str]]
    dimensions: int
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Vectors]
    vectors: Vectors = field(default_factory=list)
    abandoned: bool = False

    def settle(self, result: Vectors | BaseException) -> None:
        # A closed event loop refuses the call: nobody waits for this result any more.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(_set, self.future, result)


def _set(future: asyncio.Future[Vectors], result: Vectors | BaseException) -> None:
    if future.done():
        return
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(result)


class CpuLedger:
    """Each agent's CPU seconds on the thread over the last `window_s`."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, window_s: float = WINDOW_S) -> None:
        self._clock = clock
        self._window_s = window_s
        self._used: dict[str, deque[tuple[float, float]]] = {}

    def charge(self, agent: str, seconds: float) -> None:
        self._used.setdefault(agent, deque()).append((self._clock(), seconds))

    def spent(self, agent: str) -> float:
        return sum(seconds for _, seconds in self._recent(agent))

    def wait_until_under(self, agent: str, cap_s: float) -> float:
        """Seconds until the agent's use of the window falls under `cap_s` (0 when it is)."""
        recent = list(self._recent(agent))
        total = sum(seconds for _, seconds in recent)
        wait = 0.0
        for at, seconds in recent:  # the oldest leaves the window first
            if total < cap_s:
                break
            total -= seconds
            wait = at + self._window_s - self._clock()
        return max(wait, 0.0)

    def _recent(self, agent: str) -> deque[tuple[float, float]]:
        used = self._used.get(agent)
        if used is None:
            return deque()
        horizon = self._clock() - self._window_s
        while used and used[0][0] <= horizon:
            used.popleft()
        if not used:
            del self._used[agent]
        return used


class FairEmbeddingThread:
    """Runs `embed` on one thread of its own, a slice of each waiting agent's request in turn,
    within each agent's CPU cap (`cap_s()`, read at each slice so a fleet.yaml change applies)."""

    def __init__(
        self,
        model: str,
        embed: EmbedTexts,
        cap_s: Callable[[], float],
        *,
        ledger: CpuLedger | None = None,
        cpu_clock: Callable[[], float] = time.thread_time,
    ) -> None:
        self._model = model
        self._embed = embed
        self._cap_s = cap_s
        self._ledger = ledger or CpuLedger()
        self._cpu_clock = cpu_clock
        self._jobs: dict[str, deque[_Job]] = {}
        self._turns: deque[str] = deque()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    async def embed(self, agent: str, texts: list[str], dimensions: int) -> Vectors:
        loop = asyncio.get_running_loop()
        job = _Job(agent, slices_of(texts), dimensions, loop, loop.create_future())
        with self._changed:
            if self._closed:
                raise RuntimeError(f"the {self._model} thread is closed")
            self._refuse_if_over(agent)
            if not job.slices:
                return []
            self._start()
            queue = self._jobs.setdefault(agent, deque())
            if not queue:
                self._turns.append(agent)
            queue.append(job)
            self._changed.notify()
        try:
            return await job.future
        except asyncio.CancelledError:
            job.abandoned = True
            raise

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify()

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name=f"embedding-{self._model}", daemon=True)
            self._thread.start()

    def _refuse_if_over(self, agent: str) -> None:
        """Raises EmbeddingCpuExhausted for an agent at its cap; called holding `_changed`."""
        cap_s = self._cap_s()
        spent = self._ledger.spent(agent)
        if spent >= cap_s:
            wait = self._ledger.wait_until_under(agent, cap_s)
            raise EmbeddingCpuExhausted(agent, self._model, spent, cap_s, max(wait, 1.0))

    def _serve(self) -> None:
        while True:
            with self._changed:
                while not self._turns and not self._closed:
                    self._changed.wait()
                if self._closed:
                    self._fail_all(RuntimeError(f"the {self._model} thread is closed"))
                    return
                job, texts = self._next_slice()
            if texts is not None:
                self._run(job, texts)

    def _next_slice(self) -> tuple[_Job, list[str] | None]:
        """The next agent's job and its next slice, or None when that job ends here (abandoned
        or over the cap)."""
        agent = self._turns.popleft()
        job = self._jobs[agent][0]
        if job.abandoned:
            self._finish(job)
            return job, None
        try:
            self._refuse_if_over(agent)
        except EmbeddingCpuExhausted as refused:
            job.settle(refused)
            self._finish(job)
            return job, None
        return job, job.slices.popleft()

    def _run(self, job: _Job, texts: list[str]) -> None:
        started = self._cpu_clock()
        try:
            vectors = self._embed(texts, job.dimensions)
        except BaseException as failed:  # noqa: BLE001 - handed to the waiting request as it is
            with self._changed:
                self._ledger.charge(job.agent, self._cpu_clock() - started)
                job.settle(failed)
                self._finish(job)
            return
        with self._changed:
            self._ledger.charge(job.agent, self._cpu_clock() - started)
            job.vectors.extend(vectors)
            if job.slices:
                self._turns.append(job.agent)
            else:
                job.settle(job.vectors)
                self._finish(job)

    def _finish(self, job: _Job) -> None:
        """Drops the agent's first job; the agent keeps its turn while it has others."""
        queue = self._jobs[job.agent]
        queue.popleft()
        if queue:
            self._turns.append(job.agent)
        else:
            del self._jobs[job.agent]

    def _fail_all(self, failed: BaseException) -> None:
        for queue in self._jobs.values():
            for job in queue:
                job.settle(failed)
        self._jobs.clear()
        self._turns.clear()

"""'Work arrived for agent X', as the lifecycle hears it from the inbox, handed to the policies
that wake agents for work (the scheduler's admission): the inbox knows no waker."""

from __future__ import annotations

import threading
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from agent_runtime.protocol import InboxItem, ItemKind


class WorkArrived(BaseModel):
    model_config = ConfigDict(frozen=True)

    agent: str
    sender: str
    kind: ItemKind

    @property
    def reason(self) -> str:
        return f"{self.kind.value} from {self.sender}"


WorkAnswer = Callable[[WorkArrived], None]


class WorkArrivals:
    def __init__(self) -> None:
        self._answers: list[tuple[WorkAnswer, str | None]] = []
        self._lock = threading.Lock()

    def answer_with(self, answer: WorkAnswer, *, except_from: str | None = None) -> None:
        """`answer` hears every arrival from now on, on the thread that put the item, but for the
        items `except_from` sends (a policy that puts items itself already knows of those)."""
        with self._lock:
            self._answers.append((answer, except_from))

    def from_inbox(self, agent: str, item: InboxItem) -> None:
        """The inbox's `on_put` hook."""
        self.arrived(WorkArrived(agent=agent, sender=item.sender, kind=item.kind))

    def arrived(self, work: WorkArrived) -> None:
        with self._lock:
            answers = list(self._answers)
        for answer, except_from in answers:
            if work.sender != except_from:
                answer(work)

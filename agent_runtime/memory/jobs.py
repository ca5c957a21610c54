"""What a memory maintenance job is: its plan, its context, its schedule and its run record.

A job runs in two steps: `plan` reads its inputs and does the slow work (a model call, the
embeddings) without writing anything; the returned `JobPlan.write` then writes the artifact.
The jobs themselves live in their own modules (`extraction`, `consolidation`, `review`) and
`maintenance` registers and runs them.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agent_runtime.memory.sqlite import DatabaseError
from agent_runtime.memory.store import MemoryStore
from agent_runtime.transport.httpclient import HttpError

Complete = Callable[[str], str]
# What a model call or a job's own checks may raise; anything else is a bug and is logged.
JOB_ERRORS: tuple[type[BaseException], ...] = (
    RuntimeError,
    OSError,
    ValueError,
    LookupError,
    HttpError,
    DatabaseError,
)


class JobFailed(RuntimeError):
    """The job cannot do its work this time; the message goes into the run record."""


class JobCancelled(RuntimeError):
    """The job ran past its time limit; what it prepared is thrown away."""


class Outcome(StrEnum):
    RUNNING = "running"
    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"


class JobRun(BaseModel):
    id: int
    job: str
    trigger: str
    model: str | None = None
    input_from: str | None = None
    input_to: str | None = None
    started_at: datetime
    finished_at: datetime | None = None
    outcome: Outcome
    detail: str = ""
    changes: list[str] = Field(default_factory=list)


class JobSchedule(BaseModel):
    every_s: float | None = Field(default=None, gt=0, description="Run this long after the last run")
    after_turns: int | None = Field(default=None, ge=1, description="Run after this many new turns")
    min_gap_s: float = Field(default=60.0, ge=0, description="Never start again sooner than this")
    time_limit_s: float = Field(default=300.0, gt=0)


@dataclass
class JobPlan:
    write: Callable[[], list[str]]
    checkpoint: dict[str, Any]
    input_from: str = ""
    input_to: str = ""
    model: str | None = None
    detail: str = ""


def nothing_to_write() -> list[str]:
    return []


@dataclass
class JobContext:
    store: MemoryStore
    data_dir: Path
    checkpoint: dict[str, Any]
    trigger: str
    complete: Complete | None
    model: str | None
    now: Callable[[], datetime]
    cancelled: threading.Event = field(default_factory=threading.Event)

    @property
    def history_dir(self) -> Path:
        return self.data_dir / "history"

    @property
    def workspace_dir(self) -> Path:
        return self.data_dir / "workspace"

    def check(self) -> None:
        if self.cancelled.is_set():
            raise JobCancelled("time limit reached")

    def ask_model(self, prompt: str) -> str:
        if self.complete is None:
            raise JobFailed("no model configured")
        self.check()
        answer = self.complete(prompt)
        self.check()
        return answer


class Job(ABC):
    name: str
    artifact: str

    def __init__(self, schedule: JobSchedule) -> None:
        self.schedule = schedule

    @abstractmethod
    def plan(self, ctx: JobContext) -> JobPlan:
        """Read inputs and prepare the write; must not write anything."""

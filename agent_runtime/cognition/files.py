"""Where the `checkpoint` strategy keeps its files, and how they are written.

<data>/workspace/cognition/WORKING_MEMORY.md        injected into every prompt (capped)
<data>/workspace/cognition/facts.md                  read on demand (read_file)
<data>/workspace/cognition/preferences.md
<data>/workspace/cognition/projects.md
<data>/cognition/review.json                         read only by the jobs
<data>/cognition/checkpoints/<job>.json              each job's own checkpoint
<data>/cognition/runs/YYYY/MM/DD/<time>-<job>.json   one record per run
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from agent_runtime.workspace.versioned import atomic_write_bytes

WORKING_MEMORY = "WORKING_MEMORY.md"
SEMANTIC_FILES = ("facts.md", "preferences.md", "projects.md")
JOB_NAMES = ("review", "consolidation", "extraction")


class RunOutcome(StrEnum):
    OK = "ok"
    FAILED = "failed"


class CognitionRun(BaseModel):
    """The record a job leaves of one run."""

    job: str
    trigger: str = Field(description="turns, schedule or manual")
    model: str | None = Field(default=None, description="None: the deterministic pass, no model")
    provider: str | None = None
    started_at: datetime
    finished_at: datetime
    outcome: RunOutcome
    detail: str = ""
    input_turns: int = 0
    files_changed: list[str] = Field(default_factory=list)
    checkpoint: dict[str, Any] = Field(default_factory=dict)


class ReviewFlag(BaseModel):
    file: str = Field(description="The artifact the flagged line is in")
    line: str = Field(description="The flagged line, verbatim")
    reason: str = Field(description="stale, duplicate or superseded")


class Review(BaseModel):
    at: datetime | None = None
    flags: list[ReviewFlag] = Field(default_factory=list)


class CognitionFiles:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.semantic_dir = self.data_dir / "workspace" / "cognition"
        self.private_dir = self.data_dir / "cognition"
        self.history_dir = self.data_dir / "history"

    @property
    def working_memory(self) -> Path:
        return self.semantic_dir / WORKING_MEMORY

    @property
    def review_path(self) -> Path:
        return self.private_dir / "review.json"

    def read(self, path: Path) -> str:
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""

    def write(self, path: Path, text: str) -> bool:
        """Write when the content changed; True when it did."""
        if self.read(path) == text:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, text.encode("utf-8"))
        return True

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.data_dir))

    # Review flags

    def review(self) -> Review:
        raw = self.read(self.review_path)
        if not raw:
            return Review()
        try:
            return Review.model_validate_json(raw)
        except ValidationError:
            return Review()

    # Checkpoints

    def checkpoint(self, job: str) -> dict[str, Any]:
        raw = self.read(self.private_dir / "checkpoints" / f"{job}.json")
        try:
            value = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}

    def save_checkpoint(self, job: str, value: dict[str, Any]) -> None:
        self.write(self.private_dir / "checkpoints" / f"{job}.json", json.dumps(value, sort_keys=True))

    # Run records

    def record(self, run: CognitionRun) -> Path:
        at = run.started_at
        folder = self.private_dir / "runs" / f"{at:%Y}" / f"{at:%m}" / f"{at:%d}"
        folder.mkdir(parents=True, exist_ok=True)
        stem = f"{at:%H%M%S%f}-{run.job}"
        path = folder / f"{stem}.json"
        atomic_write_bytes(path, run.model_dump_json(indent=1).encode("utf-8"))
        return path

    def runs(self, job: str | None = None, limit: int = 50) -> list[CognitionRun]:
        """Run records, newest first."""
        paths = sorted((self.private_dir / "runs").glob("*/*/*/*.json"), reverse=True)
        found: list[CognitionRun] = []
        for path in paths:
            if job is not None and not path.stem.endswith(f"-{job}"):
                continue
            try:
                found.append(CognitionRun.model_validate_json(path.read_text(encoding="utf-8")))
            except (OSError, ValidationError):
                continue
            if len(found) >= limit:
                break
        return found

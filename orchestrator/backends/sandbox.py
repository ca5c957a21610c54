"""Running one command for an agent's `exec` tool, the way a runtime backend can.

A backend that can confine code (docker, and swarm on its local engine) runs each job in a fresh
container of the agent's image: no network, a read-only root, no capabilities, the agent's uid,
a work folder in memory and the job's caps. The process runtime cannot confine anything and says
so; it runs a job as a plain host process only when the operator allows that in so many words.

Inside, `sandbox_launcher` runs the command and reports it as one JSON line, which is read here
capped and validated like anything else that comes from an agent's side.
"""

from __future__ import annotations

import abc
import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

LAUNCHER = Path(__file__).with_name("sandbox_launcher.py")
WORK_DIR = "/work"
INPUTS_DIR = "/workspace"
# An output file is read back up to this size (the workspace's own caps apply when it is written).
OUTPUT_FILE_BYTES = 256 * 1024
# What the launcher's report may add to the captured output: base64 (4/3) and the JSON around it.
REPORT_SLACK_BYTES = 64 * 1024


@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float
    memory_bytes: int
    cpus: float
    pids: int
    output_bytes: int
    work_bytes: int


@dataclass(frozen=True)
class SandboxJob:
    """One command to run: argv, the workspace files handed in, the output files wanted back."""

    fleet: str
    agent: str
    image: str
    argv: list[str]
    limits: SandboxLimits
    inputs_dir: Path | None = None
    """An orchestrator-owned folder holding the input files, mounted read-only at /workspace."""
    outputs: list[str] = field(default_factory=list)
    """File names read back from the work folder once the command ends."""

    def launcher_spec(self, work: str, inputs: str | None, kill_all: bool) -> str:
        """The launcher's instructions, as its one argument."""
        return json.dumps(
            {
                "argv": self.argv,
                "work": work,
                "inputs": inputs,
                "timeout_s": self.limits.timeout_s,
                "output_bytes": self.limits.output_bytes,
                "outputs": self.outputs,
                "output_file_bytes": OUTPUT_FILE_BYTES,
                "kill_all": kill_all,
                "memory_bytes": None if kill_all else self.limits.memory_bytes,
            }
        )

    @property
    def report_cap(self) -> int:
        """The most bytes a well-behaved launcher writes."""
        files = OUTPUT_FILE_BYTES * len(self.outputs)
        return (2 * self.limits.output_bytes + files) * 4 // 3 + REPORT_SLACK_BYTES


class LauncherReport(BaseModel):
    """What the launcher says of the command it ran (validated: it comes from inside)."""

    model_config = ConfigDict(extra="forbid")

    started: bool = Field(description="False: the command could not be started at all")
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    oom_kills: int = Field(default=0, ge=0)
    duration_s: float = Field(default=0.0, ge=0)
    stdout: str = ""
    stderr: str = ""
    stdout_bytes: int = Field(default=0, ge=0)
    stderr_bytes: int = Field(default=0, ge=0)
    outputs: dict[str, str] = Field(default_factory=dict, description="name -> base64 content")
    missing: list[str] = Field(default_factory=list)
    too_large: list[str] = Field(default_factory=list)
    problem: str = ""


@dataclass(frozen=True)
class SandboxOutcome:
    """A finished job, as the orchestrator reports it (the report, or why there is none)."""

    report: LauncherReport | None
    duration_s: float
    killed_at_deadline: bool = False
    oom_killed: bool = False
    problem: str = ""


class CodeSandbox(abc.ABC):
    """Runs jobs; `confined` says whether it is a sandbox at all."""

    confined: bool = True
    description: str = ""

    @abc.abstractmethod
    def run(self, job: SandboxJob) -> SandboxOutcome:
        """Run one job to its end (or its time cap); `BackendError` when it could not be run."""


def parse_report(raw: bytes) -> LauncherReport | str:
    """The launcher's report from its output's last line, or what is wrong with it."""
    lines = raw.strip().splitlines()
    if not lines:
        return "the sandbox ended without a report"
    try:
        return LauncherReport.model_validate_json(lines[-1])
    except ValidationError as bad:
        return f"the sandbox's report is not valid: {bad.errors()[0]['msg']}"


def launcher_source() -> str:
    return LAUNCHER.read_text()

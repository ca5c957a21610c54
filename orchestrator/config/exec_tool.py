"""fleet.yaml's `tools.exec` of an agent: the `exec` tool, which runs a command in a throwaway
sandbox, and the caps every such run gets."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.config.units import parse_memory

MIN_EXEC_MEMORY_BYTES = 16 * 1024 * 1024
MIN_WORK_BYTES = 1024 * 1024
MAX_OUTPUT_BYTES = 1024 * 1024


class ExecPolicy(BaseModel):
    """Declared, the agent gets the `exec` tool: each call runs in a fresh container of the
    agent's image with no network, a read-only root and these caps."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_s: float = Field(
        default=30.0, gt=0, le=600, description="Wall time of one call; the sandbox is killed past it"
    )
    memory: str | int = Field(
        default="256m",
        description="Memory of one call's sandbox, its work folder included (bytes, or with k/m/g); "
        "floor 16m. Past it the kernel kills the command and the result says so",
        examples=["512m"],
    )
    cpus: float = Field(default=1.0, ge=0.05, le=64, description="CPU cores one call may use")
    pids: int = Field(
        default=64, ge=8, le=4096, description="Most processes and threads at once (a fork bomb stops here)"
    )
    output_bytes: int = Field(
        default=64 * 1024,
        ge=256,
        le=MAX_OUTPUT_BYTES,
        description="Bytes of stdout, and again of stderr, returned to the agent; the rest is cut",
    )
    work_size: str | int = Field(
        default="64m",
        description="Size of the writable work folder (/work, in memory and counted in `memory`)",
        examples=["128m"],
    )
    allow_unsandboxed: bool = Field(
        default=False,
        description="The process runtime cannot sandbox: only with true does it run exec commands "
        "as plain host processes (the orchestrator's user, the host's network and files)",
    )

    @field_validator("memory")
    @classmethod
    def _memory(cls, value: str | int) -> str | int:
        if parse_memory(value) < MIN_EXEC_MEMORY_BYTES:
            raise ValueError(f"memory {value!r} is below the floor of 16m")
        return value

    @field_validator("work_size")
    @classmethod
    def _work_size(cls, value: str | int) -> str | int:
        if parse_memory(value) < MIN_WORK_BYTES:
            raise ValueError(f"work_size {value!r} is below the floor of 1m")
        return value

    @property
    def memory_bytes(self) -> int:
        return parse_memory(self.memory)

    @property
    def work_bytes(self) -> int:
        return parse_memory(self.work_size)

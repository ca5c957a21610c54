"""The arguments of an `exec` call, as the model gives them, and the schema offered to it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agent_runtime import WORKSPACE_FILES, UnknownFile, normalize_name

MAX_COMMAND_CHARS = 16_000
MAX_PYTHON_CHARS = 64_000
COMMAND_SHOWN = 200


class ExecArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_COMMAND_CHARS,
        description="A shell command line, run by /bin/sh -c in the work folder /work",
    )
    python: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_PYTHON_CHARS,
        description="Python source, run by python3 -c in /work (instead of command)",
    )
    files: list[str] = Field(
        default_factory=list,
        max_length=len(WORKSPACE_FILES),
        description="Workspace files to copy in, read-only, at /workspace/NAME (e.g. MEMORY.md)",
    )
    outputs: list[str] = Field(
        default_factory=list,
        max_length=len(WORKSPACE_FILES),
        description="Workspace files to copy back from /work/NAME when the command ends: each "
        "becomes a new version of that file, written as the agent",
    )
    timeout_s: float | None = Field(
        default=None, gt=0, description="Seconds before the command is killed (at most the policy's cap)"
    )

    @field_validator("files", "outputs")
    @classmethod
    def _workspace_names(cls, names: list[str]) -> list[str]:
        canonical = []
        for name in names:
            try:
                canonical.append(normalize_name(name))
            except UnknownFile:
                raise ValueError(
                    f"{name!r} is not a workspace file (known: {', '.join(WORKSPACE_FILES)})"
                ) from None
        return list(dict.fromkeys(canonical))

    @model_validator(mode="after")
    def _one_program(self) -> ExecArguments:
        if (self.command is None) == (self.python is None):
            raise ValueError("give either command (a shell command line) or python (Python source)")
        return self

    @property
    def argv(self) -> list[str]:
        if self.python is not None:
            return ["python3", "-c", self.python]
        assert self.command is not None
        return ["/bin/sh", "-c", self.command]

    @property
    def shown(self) -> str:
        """The program, shortened, for events and logs."""
        text = self.command if self.command is not None else f"python3 -c {self.python!r}"
        text = " ".join(text.split())
        return text if len(text) <= COMMAND_SHOWN else text[: COMMAND_SHOWN - 1] + "…"


def parse_arguments(arguments: dict[str, Any]) -> ExecArguments | str:
    """The arguments, or what is wrong with them (for the agent to correct)."""
    try:
        return ExecArguments.model_validate(arguments)
    except ValidationError as bad:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: "
            f"{error['msg'].removeprefix('Value error, ')}"
            for error in bad.errors()
        )
        return f"invalid arguments for exec: {problems}"


def input_schema() -> dict[str, Any]:
    schema = ExecArguments.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        prop.pop("default", None)
        if "anyOf" in prop:
            # `X | None` is offered as X: the model leaves the field out rather than sending null.
            options = [option for option in prop.pop("anyOf") if option.get("type") != "null"]
            prop.update(options[0])
    return schema

"""A loaded fleet and the problems found while loading one: plain records, read by every part of
the orchestrator that needs the fleet (the loader in `loader` makes them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.config.models import FleetConfig
from orchestrator.config.safe_yaml import FieldPath


@dataclass(frozen=True)
class ConfigProblem:
    file: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        field_part = f" {self.path}:" if self.path else ""
        return f"{where}:{field_part} {self.message}"


class ConfigError(Exception):
    def __init__(self, problems: list[ConfigProblem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@dataclass(frozen=True)
class LoadedFleet:
    """A validated fleet and what was resolved from its folder."""

    config: FleetConfig
    path: Path
    interfaces: dict[str, str] = field(default_factory=dict)
    project_md: str | None = None
    warnings: list[ConfigProblem] = field(default_factory=list)
    lines: dict[FieldPath, int] = field(default_factory=dict, compare=False, repr=False)
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Derived values (per-agent settings), computed once: a loaded fleet never changes."""

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def name(self) -> str:
        return self.config.fleet


class Problems:
    """Collects problems of one file, placing each on the nearest line the file has."""

    def __init__(self, file: str, lines: dict[FieldPath, int]) -> None:
        self.file = file
        self.lines = lines
        self.found: list[ConfigProblem] = []
        self.warnings: list[ConfigProblem] = []

    def line_of(self, path: FieldPath) -> int | None:
        for cut in range(len(path), -1, -1):
            if path[:cut] in self.lines:
                return self.lines[path[:cut]]
        return None

    def add(self, path: FieldPath, message: str, line: int | None = None) -> None:
        self.found.append(ConfigProblem(self.file, line or self.line_of(path), format_path(path), message))

    def warn(self, path: FieldPath, message: str) -> None:
        self.warnings.append(ConfigProblem(self.file, self.line_of(path), format_path(path), message))

    def sorted(self) -> list[ConfigProblem]:
        return sorted(dict.fromkeys(self.found), key=lambda p: (p.line or 0, p.path))


def format_path(path: FieldPath) -> str:
    return ".".join(str(part) for part in path)


def set_aside_under(set_aside: set[str], prefix: str) -> bool:
    return any(item == prefix or item.startswith(prefix + ".") for item in set_aside)

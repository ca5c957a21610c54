"""Load fleet.yaml, validate it, and report every problem with its file, line and field path."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from orchestrator.config.models import DNS_LABEL, TEST_MODEL, FleetConfig
from orchestrator.gateway.prices import unpriced_budget_problems

FieldPath = tuple[str | int, ...]


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

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def name(self) -> str:
        return self.config.fleet

    def agent_hash(self, agent: str) -> str:
        """A digest of everything that shapes an agent's container; a change means recreate."""
        doc = {
            "agent": self.config.agents[agent].model_dump(mode="json"),
            "resources": self.config.resources_of(agent).model_dump(mode="json"),
            "model": self.config.model_of(agent),
            "interface": self.interfaces.get(agent, ""),
            "peers": sorted(self.config.agents),
        }
        raw = json.dumps(doc, sort_keys=True).encode()
        return hashlib.sha256(raw).hexdigest()[:16]


def _line_map(node: yaml.Node, prefix: FieldPath = ()) -> dict[FieldPath, int]:
    lines: dict[FieldPath, int] = {prefix: node.start_mark.line + 1}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[(*prefix, key)] = key_node.start_mark.line + 1
            for sub, line in _line_map(value_node, (*prefix, key)).items():
                lines.setdefault(sub, line)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines.update(_line_map(item, (*prefix, index)))
    return lines


def _nearest_line(lines: dict[FieldPath, int], path: FieldPath) -> int | None:
    for cut in range(len(path), -1, -1):
        if path[:cut] in lines:
            return lines[path[:cut]]
    return None


def _format_path(path: FieldPath) -> str:
    return ".".join(str(part) for part in path)


def _parse_yaml(path: Path) -> tuple[Any, dict[FieldPath, int]]:
    text = path.read_text(encoding="utf-8")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark else None
        raise ConfigError([ConfigProblem(str(path), line, "", f"invalid YAML: {exc.problem}")]) from None
    return data, (_line_map(node) if node is not None else {})


def _pydantic_problems(exc: ValidationError, file: str, lines: dict[FieldPath, int]) -> list[ConfigProblem]:
    problems = []
    for error in exc.errors():
        loc = tuple(part for part in error["loc"] if not str(part).startswith("function-"))
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = f"unknown field '{loc[-1]}'"
        problems.append(ConfigProblem(file, _nearest_line(lines, loc), _format_path(loc), message))
    return problems


def _model_problems(config: FleetConfig, model: str) -> str | None:
    if model == TEST_MODEL:
        return None
    provider = model.split(":", 1)[0] if ":" in model else None
    if provider is None:
        return f"model {model!r} names no provider: write provider:model, e.g. openai:gpt-4o-mini"
    if provider not in config.llm.providers:
        known = ", ".join(sorted(config.llm.providers)) or "none declared"
        return f"model {model!r} uses unknown provider {provider!r} (providers: {known})"
    return None


def _cross_checks(
    config: FleetConfig, root: Path, file: str, lines: dict[FieldPath, int]
) -> tuple[list[ConfigProblem], dict[str, str]]:
    problems: list[ConfigProblem] = []
    interfaces: dict[str, str] = {}

    def problem(path: FieldPath, message: str) -> None:
        problems.append(ConfigProblem(file, _nearest_line(lines, path), _format_path(path), message))

    for name, agent in config.agents.items():
        if not DNS_LABEL.match(name):
            problem(("agents", name), f"invalid agent name {name!r}: use a DNS label (a-z, 0-9, '-')")
        for index, peer in enumerate(agent.talks_to):
            if peer not in config.agents:
                problem(("agents", name, "talks_to", index), f"unknown agent {peer!r} in talks_to")
            elif peer == name:
                problem(("agents", name, "talks_to", index), "an agent cannot talk to itself")
        for key in ("model", "heartbeat_model"):
            model = getattr(agent, key)
            if model and (why := _model_problems(config, model)):
                problem(("agents", name, key), why)
        interfaces[name] = _resolve_interface(agent.interface, root, problem, ("agents", name, "interface"))
    for model in filter(
        None, [config.llm.default_model, config.llm.fallback_model, config.embedding_model()]
    ):
        if why := _model_problems(config, model):
            problem(("llm",), why)
    if not problems:
        for path, why in unpriced_budget_problems(config):
            problem(path, why)
    return problems, interfaces


def _resolve_interface(value: str, root: Path, problem: Any, path: FieldPath) -> str:
    """Inline text is used as is; a single line ending in .md/.yaml is a path in the fleet folder."""
    if not value or "\n" in value or not value.strip().endswith((".md", ".yaml", ".yml")):
        return value
    target = (root / value.strip()).resolve()
    if not target.is_relative_to(root.resolve()):
        problem(path, f"path {value!r} escapes the fleet folder")
        return ""
    if not target.is_file():
        problem(path, f"file {value!r} not found in {root}")
        return ""
    return target.read_text(encoding="utf-8")


def load_fleet(path: str | Path) -> LoadedFleet:
    """Load and validate a fleet file. Raises ConfigError listing every problem found."""
    file_path = Path(path)
    if not file_path.is_file():
        raise ConfigError([ConfigProblem(str(file_path), None, "", "file not found")])
    data, lines = _parse_yaml(file_path)
    if not isinstance(data, dict):
        raise ConfigError([ConfigProblem(str(file_path), 1, "", "the top level must be a mapping")])
    try:
        config = FleetConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_pydantic_problems(exc, str(file_path), lines)) from None
    problems, interfaces = _cross_checks(config, file_path.parent, str(file_path), lines)
    if problems:
        raise ConfigError(problems)
    project = file_path.parent / "PROJECT.md"
    project_md = project.read_text(encoding="utf-8") if project.is_file() else None
    return LoadedFleet(config, file_path, interfaces, project_md)

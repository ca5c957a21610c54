"""Load fleet.yaml, validate it, and report every problem with its file, line and field path.

One pass reports everything `up` would refuse: the YAML itself (read by `safe_yaml`), the
schema, references between agents, the files fleet.yaml names, and then what the seeded
workspace files, contracts, heartbeat rules and resources must satisfy (`checks`). Parts of the
file that fail the schema are set aside so the checks still run on the rest.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agent_runtime.memory import BLENDED_EMBEDDING_MODEL, LOCAL_EMBEDDING_MODEL, MULTILINGUAL_EMBEDDING_MODEL
from orchestrator.config.edges import edge_problems
from orchestrator.config.field_names import allowed_fields
from orchestrator.config.fleet import (
    ConfigError,
    ConfigProblem,
    LoadedFleet,
    Problems,
    format_path,
    set_aside_under,
)
from orchestrator.config.fleet_checks import FLEET_CHECKS
from orchestrator.config.models import (
    BLENDED_EMBEDDING_DIMENSIONS,
    LOCAL_EMBEDDING_DIMENSIONS,
    LOCAL_EMBEDDING_PACKAGES,
    MULTILINGUAL_EMBEDDING_DIMENSIONS,
    TEST_MODEL,
    FleetConfig,
    default_model_missing_notice,
    default_model_partial_notice,
    local_embedding_installed,
    missing_package_message,
)
from orchestrator.config.paths import FleetFolder
from orchestrator.config.safe_yaml import FieldPath, YamlRefused, load_yaml_file
from orchestrator.config.wrong_names import did_you_mean

if TYPE_CHECKING:
    from orchestrator.config.capacity import Capacity

PROJECT_FILE = "PROJECT.md"
NOT_FOUND = (
    "file not found: run flotilla in a fleet's folder, name the file with -f, "
    "or start a fleet with `flotilla init`"
)
SALVAGE_ROUNDS = 4


def _schema_problems(exc: ValidationError, problems: Problems) -> list[FieldPath]:
    """Record each schema error; return their locations."""
    locations = []
    for error in exc.errors():
        loc = _clean_loc(error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            allowed = allowed_fields(FleetConfig, loc[:-1])
            message = f"unknown field '{loc[-1]}'{did_you_mean(str(loc[-1]), allowed)}"
        problems.add(loc, message)
        locations.append(loc)
    return locations


def _salvage(data: dict[str, Any], problems: Problems) -> tuple[FleetConfig | None, set[str]]:
    """Validate the file; on schema errors, set the failing fields aside and validate what is
    left, so the later checks still see the rest. Returns the config and the paths set aside.
    """
    data = copy.deepcopy(data)
    set_aside: set[str] = set()
    for round_number in range(SALVAGE_ROUNDS):
        try:
            return FleetConfig.model_validate(data), set_aside
        except ValidationError as exc:
            if round_number == 0:
                locations = _schema_problems(exc, problems)
            else:
                locations = [_clean_loc(e["loc"]) for e in exc.errors()]
        for loc in sorted(locations, key=format_path, reverse=True):
            if loc == ("fleet",):
                data["fleet"] = "fleet"
            elif loc:
                _drop(data, loc)
                set_aside.add(format_path(loc))
        if not isinstance(data.get("agents"), dict) or not data["agents"]:
            return None, set_aside
    return None, set_aside


def _clean_loc(loc: tuple[str | int, ...]) -> FieldPath:
    return tuple(part for part in loc if not str(part).startswith("function-"))


def _drop(data: Any, loc: FieldPath) -> None:
    """Remove the value at `loc` (or the nearest container of it that exists)."""
    parents: list[tuple[Any, str | int]] = []
    node: Any = data
    for part in loc:
        inside_list = isinstance(node, list) and isinstance(part, int) and part < len(node)
        if not inside_list and not (isinstance(node, dict) and part in node):
            break
        parents.append((node, part))
        node = node[part]
    if parents:
        container, key = parents[-1]
        del container[key]


def _model_problem(config: FleetConfig, model: str, *, embedding: bool = False) -> str | None:
    if model == TEST_MODEL:
        return None
    if model in LOCAL_EMBEDDING_PACKAGES:
        if not embedding:
            return f"model {model!r} is an embedding model: name it under llm.embedding.model"
        return None if local_embedding_installed(model) else missing_package_message(model)
    provider = model.split(":", 1)[0] if ":" in model else None
    if provider is None:
        return f"model {model!r} names no provider: write provider:model, e.g. openai:gpt-4o-mini"
    if provider not in config.llm.providers:
        known = ", ".join(sorted(config.llm.providers)) or "none declared"
        return f"model {model!r} uses unknown provider {provider!r} (providers: {known})"
    return None


def _cross_checks(config: FleetConfig, names: set[str], set_aside: set[str], problems: Problems) -> None:
    from orchestrator.config.checks import agent_name_problem

    for name, agent in config.agents.items():
        for index, peer in enumerate(agent.talks_to):
            if peer not in names:
                problems.add(("agents", name, "talks_to", index), f"unknown agent {peer!r} in talks_to")
            elif peer == name:
                problems.add(("agents", name, "talks_to", index), "an agent cannot talk to itself")
        if not set_aside_under(set_aside, "llm"):
            _agent_model_checks(config, name, problems)
    for name in sorted(names):
        if why := agent_name_problem(name):
            problems.add(("agents", name), why)
    _edge_checks(config, problems)
    if not set_aside_under(set_aside, "llm"):
        _fleet_model_checks(config, set_aside, problems)
    if not problems.found and not set_aside_under(set_aside, "llm"):
        _registered_model_checks(config, problems)


def _registered_model_checks(config: FleetConfig, problems: Problems) -> None:
    for model_check in FLEET_CHECKS.models.values():
        for path, why in model_check(config):
            problems.add(path, why)


def _agent_model_checks(config: FleetConfig, name: str, problems: Problems) -> None:
    agent = config.agents[name]
    for key in ("model", "heartbeat_model"):
        model = getattr(agent, key)
        if model and (why := _model_problem(config, model)):
            problems.add(("agents", name, key), why)
    for index, model in enumerate(agent.fallback):
        if why := _model_problem(config, model):
            problems.add(("agents", name, "fallback", index), why)


def _edge_checks(config: FleetConfig, problems: Problems) -> None:
    for path, why in edge_problems(config):
        problems.add(path, why)
    for reference_check in FLEET_CHECKS.references.values():
        for path, why in reference_check(config):
            problems.add(path, why)


def _fleet_model_checks(config: FleetConfig, set_aside: set[str], problems: Problems) -> None:
    llm = config.llm
    for key, model in (("default_model", llm.default_model), ("fallback_model", llm.fallback_model)):
        if model and (why := _model_problem(config, model)):
            problems.add(("llm", key), why)
    embedding = config.embedding_model()
    if embedding and (why := _model_problem(config, embedding, embedding=True)):
        problems.add(("llm", "embedding", "model"), why)
    if config.default_embedding_missing():
        problems.warn(("llm", "embedding", "model"), default_model_missing_notice())
    elif config.default_embedding_partial():
        problems.warn(("llm", "embedding", "model"), default_model_partial_notice())
    size = llm.embedding.dimensions
    local_sizes = {
        LOCAL_EMBEDDING_MODEL: LOCAL_EMBEDDING_DIMENSIONS,
        MULTILINGUAL_EMBEDDING_MODEL: MULTILINGUAL_EMBEDDING_DIMENSIONS,
        BLENDED_EMBEDDING_MODEL: BLENDED_EMBEDDING_DIMENSIONS,
    }
    allowed = local_sizes.get(embedding or "")
    if allowed is not None and size is not None and size not in allowed:
        sizes = ", ".join(str(s) for s in allowed)
        problems.add(
            ("llm", "embedding", "dimensions"),
            f"model {embedding!r} gives vectors of {sizes} dimensions, not {size}",
        )
    if not set_aside_under(set_aside, "defaults"):
        for key in ("model", "heartbeat_model"):
            model = getattr(config.defaults, key)
            if model and (why := _model_problem(config, model)):
                problems.add(("defaults", key), why)


def _resolve_files(
    config: FleetConfig, folder: FleetFolder, problems: Problems
) -> tuple[dict[str, str], str | None]:
    interfaces: dict[str, str] = {}
    for name, agent in config.agents.items():
        where = ("agents", name, "interface")
        try:
            interfaces[name] = folder.text_or_path(agent.interface)
        except ValueError as bad:
            problems.add(where, str(bad))
            interfaces[name] = ""
    try:
        project_md = folder.optional_file(PROJECT_FILE)
    except ValueError as bad:
        problems.add((), str(bad), line=1)
        project_md = None
    return interfaces, project_md


def load_fleet(
    path: str | Path, capacity: Capacity | None = None, *, contracts: bool = True, secrets: bool = True
) -> LoadedFleet:
    """Load and validate a fleet file. Raises ConfigError listing every problem found.

    With `capacity` (what the container engine can give), resources are checked against it too.
    `contracts=False` leaves the contracts to `flotilla contracts check`, which reports on them.
    `secrets=False` makes an unreadable secret a warning: commands that stop or look at a fleet
    never use a secret's value.
    """
    FLEET_CHECKS.require()
    file_path = Path(path)
    file = str(file_path)
    if not file_path.is_file():
        raise ConfigError([ConfigProblem(file, None, "", NOT_FOUND)])
    try:
        document = load_yaml_file(file_path)
    except YamlRefused as refused:
        raise ConfigError([ConfigProblem(file, p.line, "", p.message) for p in refused.problems]) from None
    data = document.data
    if not isinstance(data, dict):
        raise ConfigError([ConfigProblem(file, 1, "", "the top level must be a mapping")])
    problems = Problems(file, document.lines)
    config, set_aside = _salvage(data, problems)
    if config is None:
        raise ConfigError(problems.sorted())
    names = {str(n) for n in data["agents"]} if isinstance(data.get("agents"), dict) else set(config.agents)
    _cross_checks(config, names, set_aside, problems)
    interfaces, project_md = _resolve_files(config, FleetFolder(file_path.parent), problems)
    fleet = LoadedFleet(config, file_path, interfaces, project_md)
    from orchestrator.config.checks import check_fleet

    check_fleet(fleet, problems, capacity, set_aside, data, contracts=contracts, secrets=secrets)
    if problems.found:
        raise ConfigError(problems.sorted())
    return LoadedFleet(config, file_path, interfaces, project_md, problems.warnings, document.lines)


def check_capacity(fleet: LoadedFleet, capacity: Capacity | None) -> None:
    """Check a loaded fleet's resources against an engine met after loading; ConfigError if over."""
    if capacity is None:
        return
    from orchestrator.config.checks import check_resources

    problems = Problems(str(fleet.path), fleet.lines)
    check_resources(fleet, problems, capacity, set())
    if problems.found:
        raise ConfigError(problems.sorted())

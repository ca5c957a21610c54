"""Read YAML that may be hostile or broken (fleet.yaml, INTERFACE.md front matter) and say exactly
what is wrong with it.

Every refusal is a `YamlProblem` naming the line; nothing here raises anything else for bad
input. The bounds hold before any expansion: the file's size and nesting are checked on the
event stream, and what aliases would expand to is measured on the node graph (each node once),
so a small file that would expand to gigabytes is refused at the cost of its own size.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

FieldPath = tuple[str | int, ...]

MAX_FILE_BYTES = 1024 * 1024
MAX_DEPTH = 40
"""fleet.yaml itself is about six levels deep; JSON Schemas written inline add a dozen more."""
MAX_NODES = 100_000
"""Scalars, mappings and sequences after alias expansion: far above a thousand-agent fleet."""

MERGE_TAG = "tag:yaml.org,2002:merge"
# libyaml when PyYAML has it (five times faster); both keep marks and build the same nodes.
LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class YamlProblem:
    line: int | None
    message: str


class YamlRefused(Exception):
    """The file cannot be read as one safe YAML document; `problems` says why and where."""

    def __init__(self, problems: list[YamlProblem]) -> None:
        self.problems = problems
        super().__init__("; ".join(p.message for p in problems))


@dataclass(frozen=True)
class YamlDocument:
    data: Any
    lines: dict[FieldPath, int]
    """The line of every field path, as far as the file has one (aliases name their anchor's line)."""


def read_text_file(path: Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The file's text, refused when too large or not UTF-8 (naming the line of the bad byte)."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise YamlRefused([YamlProblem(None, f"cannot read the file: {exc.strerror or exc}")]) from None
    if len(raw) > max_bytes:
        raise YamlRefused([YamlProblem(None, f"the file is larger than {max_bytes // 1024} KiB")])
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        byte = raw[exc.start : exc.start + 1].hex()
        raise YamlRefused(
            [YamlProblem(line, f"not UTF-8 text: byte 0x{byte} at column {column}; save the file as UTF-8")]
        ) from None


def load_yaml_file(path: Path) -> YamlDocument:
    return load_yaml(read_text_file(path))


def load_yaml(text: str, max_nodes: int = MAX_NODES) -> YamlDocument:
    """Parse one YAML document with bounded depth and expansion and no duplicate keys."""
    try:
        _check_events(text, max_nodes)
        loader = LOADER(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return YamlDocument(None, {})
            _check_graph(node, max_nodes)
            data = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise YamlRefused([YamlProblem(line, f"invalid YAML: {exc.problem or exc.context}")]) from None
    except yaml.YAMLError as exc:
        raise YamlRefused([YamlProblem(None, f"invalid YAML: {exc}")]) from None
    return YamlDocument(data, _line_map(node))


def _check_events(text: str, max_nodes: int) -> None:
    """Nesting and size on the event stream, before a single node is built."""
    depth = 0
    count = 0
    for event in yaml.parse(text, Loader=LOADER):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise YamlRefused([YamlProblem(_line(event), f"nested deeper than {MAX_DEPTH} levels")])
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        if isinstance(event, yaml.NodeEvent):
            count += 1
            if count > max_nodes:
                raise YamlRefused([YamlProblem(_line(event), f"more than {max_nodes} values in one file")])


def _line(event: yaml.Event | yaml.Node) -> int | None:
    return event.start_mark.line + 1 if event.start_mark else None


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_graph(root: yaml.Node, max_nodes: int) -> None:
    """Refuse recursive aliases, alias expansion past the bounds, and duplicate keys.

    Aliases make the node tree a graph: each node is measured once (its expanded size and depth
    from its children's), so the cost follows the file, not what it would expand to.
    """
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_nodes: set[int] = set()
    duplicates: list[YamlProblem] = []
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            if size[key] > max_nodes:
                message = f"aliases expand to more than {max_nodes} values; refused"
                raise YamlRefused([YamlProblem(_line(node), message)])
            if depth[key] > MAX_DEPTH:
                message = f"aliases expand to a nesting deeper than {MAX_DEPTH} levels; refused"
                raise YamlRefused([YamlProblem(_line(node), message)])
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise YamlRefused([YamlProblem(_line(node), "an alias refers to a value that contains it")])
        open_nodes.add(key)
        if isinstance(node, yaml.MappingNode):
            duplicates += _duplicate_keys(node)
        stack.append((node, True))
        stack.extend((kid, False) for kid in _children(node) if id(kid) not in size)
    if duplicates:
        raise YamlRefused(sorted(duplicates, key=lambda p: p.line or 0))


def _duplicate_keys(node: yaml.MappingNode) -> list[YamlProblem]:
    seen: dict[tuple[str, str], yaml.Node] = {}
    problems = []
    for key_node, _value in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == MERGE_TAG:
            continue
        identity = (key_node.tag, key_node.value)
        first = seen.setdefault(identity, key_node)
        if first is not key_node:
            problems.append(
                YamlProblem(
                    _line(key_node),
                    f"duplicate key {key_node.value!r} (first at line {_line(first)}); "
                    "a key may appear once in a mapping",
                )
            )
    return problems


def _line_map(root: yaml.Node) -> dict[FieldPath, int]:
    lines: dict[FieldPath, int] = {}
    stack: list[tuple[yaml.Node, FieldPath]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != MERGE_TAG:
                    sub = (*path, key_node.value)
                    lines[sub] = key_node.start_mark.line + 1
                    stack.append((value_node, sub))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*path, index)) for index, item in enumerate(node.value))
    return lines

"""The page as the agent reads it (`browser_snapshot`), from Chromium's accessibility tree (CDP
`Accessibility.getFullAXTree`): headings, text and the elements it can act on, in tree order.

Each actionable element gets a ref (`e12`) tied to its DOM node's backend id, so the same element
keeps its ref for the page's life and a ref is never given to two elements within a session. The
text inside a field (what was typed into it) is not shown: only its role and accessible name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

REF_PREFIX = "e"
# Roles the agent can click or type into; their text is their name, so their children are not listed.
ACTIONABLE = frozenset(
    {
        "link",
        "button",
        "textbox",
        "searchbox",
        "combobox",
        "listbox",
        "option",
        "checkbox",
        "radio",
        "switch",
        "slider",
        "spinbutton",
        "tab",
        "menuitem",
        "menuitemcheckbox",
        "menuitemradio",
        "treeitem",
        "DisclosureTriangle",
    }
)
FIELDS = frozenset({"textbox", "searchbox", "combobox", "spinbutton"})
NAME_CHARS = 120
# Backend node ids remembered per session before the oldest page's refs are dropped.
REFS_KEPT = 20000


class AxValue(BaseModel):
    model_config = ConfigDict(extra="ignore")

    value: Any = None


class AxProperty(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    value: AxValue = Field(default_factory=AxValue)


class AxNode(BaseModel):
    """One node of CDP's `Accessibility.AXNode`, the fields the snapshot reads."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    node_id: str = Field(alias="nodeId")
    ignored: bool = False
    role: AxValue | None = None
    name: AxValue | None = None
    properties: list[AxProperty] = Field(default_factory=list)
    child_ids: list[str] = Field(default_factory=list, alias="childIds")
    backend_id: int | None = Field(default=None, alias="backendDOMNodeId")
    parent_id: str | None = Field(default=None, alias="parentId")

    @property
    def role_name(self) -> str:
        return str(self.role.value) if self.role is not None and self.role.value is not None else ""

    @property
    def label(self) -> str:
        text = str(self.name.value) if self.name is not None and self.name.value is not None else ""
        return re.sub(r"\s+", " ", text).strip()[:NAME_CHARS]

    def property(self, name: str) -> Any:
        return next((p.value.value for p in self.properties if p.name == name), None)


class AxTree(BaseModel):
    model_config = ConfigDict(extra="ignore")

    nodes: list[AxNode] = Field(default_factory=list)

    def fields(self) -> list[int]:
        """Backend ids of the text fields (whose `type` tells a password field)."""
        return [
            node.backend_id
            for node in self.nodes
            if node.role_name in FIELDS and node.backend_id is not None and not node.ignored
        ]


@dataclass
class RefBook:
    """Refs of one session: backend node id <-> ref, numbered from 1, never reused."""

    next: int = 1
    by_node: dict[int, str] = field(default_factory=dict)
    by_ref: dict[str, int] = field(default_factory=dict)

    def ref_for(self, backend_id: int) -> str:
        found = self.by_node.get(backend_id)
        if found is None:
            if len(self.by_node) >= REFS_KEPT:
                self.by_node.clear()
                self.by_ref.clear()
            found = f"{REF_PREFIX}{self.next}"
            self.next += 1
            self.by_node[backend_id] = found
            self.by_ref[found] = backend_id
        return found

    def node_of(self, ref: str) -> int | None:
        return self.by_ref.get(ref)


def render(tree: AxTree, refs: RefBook, passwords: set[int], limit: int) -> list[str]:
    """The snapshot's lines: at most `limit`, in tree order from the root."""
    by_id = {node.node_id: node for node in tree.nodes}
    roots = [node for node in tree.nodes if node.parent_id is None or node.parent_id not in by_id]
    lines: list[str] = []
    pending = list(reversed(roots[:1]))
    while pending and len(lines) < limit:
        node = pending.pop()
        line = None if node.ignored else _line(node, refs, passwords)
        if line is not None:
            lines.append(line)
        if node.ignored or node.role_name not in ACTIONABLE | {"heading", "StaticText"}:
            pending.extend(by_id[child] for child in reversed(node.child_ids) if child in by_id)
    return lines


def _line(node: AxNode, refs: RefBook, passwords: set[int]) -> str | None:
    role = node.role_name
    if role == "StaticText":
        return f"text: {node.label}" if node.label else None
    if role == "heading":
        return f'heading "{node.label}" [level={node.property("level") or 1}]'
    if role == "image" and node.label:
        return f'image "{node.label}"'
    if role not in ACTIONABLE:
        return None
    marks = ""
    if node.backend_id in passwords:
        marks += " [password]"
    if str(node.property("checked")) == "true":
        marks += " [checked]"
    if node.property("disabled") is True:
        return f'{role} "{node.label}"{marks} [disabled]'
    if node.backend_id is None:
        return f'{role} "{node.label}"{marks}'
    return f'{role} "{node.label}"{marks} [ref={refs.ref_for(node.backend_id)}]'


def is_password(described: dict[str, Any]) -> bool:
    """Whether CDP's `DOM.describeNode` answer is an `<input type=password>`."""
    node = described.get("node") or {}
    attributes = node.get("attributes") or []
    pairs = dict(zip(attributes[::2], attributes[1::2], strict=False))
    return (
        str(node.get("nodeName", "")).upper() == "INPUT" and str(pairs.get("type", "")).lower() == "password"
    )

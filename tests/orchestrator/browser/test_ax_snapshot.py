"""The snapshot read from Chromium's accessibility tree, on a tree as CDP returns it: refs stay on
their elements and are never reused, and the text inside a field is never listed."""

from __future__ import annotations

from typing import Any

from orchestrator.browser.snapshot import AxTree, RefBook, is_password, render


def node(node_id: int, role: str, name: str = "", parent: int | None = None, **extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = {
        "nodeId": str(node_id),
        "role": {"type": "role", "value": role},
        "name": {"type": "computedString", "value": name},
        "backendDOMNodeId": node_id,
        "childIds": [str(child) for child in extra.pop("children", [])],
        "properties": [{"name": key, "value": {"value": value}} for key, value in extra.items()],
    }
    if parent is not None:
        found["parentId"] = str(parent)
    return found


def login_tree(typed: str) -> AxTree:
    return AxTree.model_validate(
        {
            "nodes": [
                node(1, "RootWebArea", "Sign in", children=[2, 3, 4, 5, 6, 9]),
                node(2, "heading", "Welcome  back", 1, level=2, children=[20]),
                node(3, "textbox", "User ", 1, children=[7]),
                node(4, "textbox", "Password ", 1),
                node(5, "checkbox", "Remember me", 1, checked="true"),
                node(6, "button", "Off", 1, disabled=True),
                node(7, "generic", "", 3, children=[8]),
                node(8, "StaticText", typed, 7),
                {**node(9, "none", "", 1, children=[10]), "ignored": True},
                node(10, "link", "Go there", 9, children=[11]),
                node(11, "StaticText", "Go there", 10),
                node(20, "StaticText", "Welcome back", 2),
            ]
        }
    )


def test_the_tree_reads_as_roles_names_and_refs_without_what_fields_hold() -> None:
    refs = RefBook()
    lines = render(login_tree("typed-secret-value"), refs, {4}, 100)
    assert lines == [
        'heading "Welcome back" [level=2]',
        'textbox "User" [ref=e1]',
        'textbox "Password" [password] [ref=e2]',
        'checkbox "Remember me" [checked] [ref=e3]',
        'button "Off" [disabled]',
        'link "Go there" [ref=e4]',
    ]
    assert refs.node_of("e2") == 4


def test_refs_stay_on_their_elements_and_are_never_reused() -> None:
    refs = RefBook()
    first = render(login_tree(""), refs, set(), 100)
    again = render(login_tree("x"), refs, set(), 100)
    assert first == again
    other_page = AxTree.model_validate(
        {"nodes": [node(50, "RootWebArea", "Next", children=[51]), node(51, "button", "Go", 50)]}
    )
    assert render(other_page, refs, set(), 100) == ['button "Go" [ref=e5]']


def test_the_line_limit_holds() -> None:
    assert len(render(login_tree(""), RefBook(), set(), 2)) == 2


def test_a_password_field_is_told_by_its_type() -> None:
    assert is_password({"node": {"nodeName": "INPUT", "attributes": ["name", "p", "type", "PASSWORD"]}})
    assert not is_password({"node": {"nodeName": "INPUT", "attributes": ["type", "text"]}})
    assert not is_password({"node": {"nodeName": "DIV", "attributes": ["type", "password"]}})

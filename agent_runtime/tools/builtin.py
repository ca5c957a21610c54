"""The runtime's own tools: workspace files, capped identity files, corrections.

The identity files and the learnings are in the prompt of every conversation the agent has, so
a paired person's conversation changes them only when the admission rule (fleet.yaml
`memory_shared_writers`) lets people write the shared memory; by default what a person says is
kept with memory_save, in their own scope.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_runtime.tools.registry import Tool, ToolError
from agent_runtime.workspace.files import WorkspaceFiles
from agent_runtime.workspace.learnings import Learnings
from agent_runtime.workspace.versioned import CAPS, READ_ONLY, WORKSPACE_FILES, Workspace, WorkspaceError

WRITABLE = [name for name in WORKSPACE_FILES if name not in READ_ONLY]
SharedWrites = Callable[[], bool]
"""True when the item being worked on may change what every conversation's prompt shows."""
NOT_SHARED = (
    "refused: {what} is in the prompt of every conversation, and the person who sent this message "
    "may not write what is shared with others (fleet.yaml memory_shared_writers); keep what they "
    "tell you with memory_save, which saves it in their own scope"
)


def _always() -> bool:
    return True


def _caps_text() -> str:
    return ", ".join(
        f"{name} {cap // 1024} KiB" if cap else f"{name} uncapped"
        for name, cap in CAPS.items()
        if name in WRITABLE
    )


def file_tools(files: WorkspaceFiles) -> list[Tool]:
    def read_file(args: dict[str, Any]) -> str:
        return files.read(str(args["path"]))

    def write_file(args: dict[str, Any]) -> str:
        size = files.write(str(args["path"]), str(args["content"]))
        return f"wrote {size} bytes to {args['path']}"

    def list_files(args: dict[str, Any]) -> str:
        entries = files.list(str(args.get("path") or "."))
        if not entries:
            return "(empty folder)"
        return "\n".join(f"{e.path}/" if e.is_dir else f"{e.path} ({e.size} bytes)" for e in entries)

    path = {"type": "string", "description": "Path relative to your workspace folder, e.g. notes/todo.md"}
    return [
        Tool(
            "read_file",
            "Read a text file from your workspace folder (identity files included).",
            {
                "type": "object",
                "properties": {"path": path},
                "required": ["path"],
                "additionalProperties": False,
            },
            read_file,
        ),
        Tool(
            "write_file",
            "Create or replace a text file in your workspace folder. The identity files (SOUL.md, "
            "MEMORY.md, ...) are not written here: use update_workspace.",
            {
                "type": "object",
                "properties": {"path": path, "content": {"type": "string"}},
                "required": ["path", "content"],
                "additionalProperties": False,
            },
            write_file,
        ),
        Tool(
            "list_files",
            "List a folder of your workspace (the root when no path is given).",
            {"type": "object", "properties": {"path": path}, "additionalProperties": False},
            list_files,
        ),
    ]


def workspace_tool(workspace: Workspace, writes_shared: SharedWrites | None = None) -> Tool:
    shared = writes_shared or _always

    def update_workspace(args: dict[str, Any]) -> str:
        name = str(args["name"])
        if not shared():
            raise ToolError(NOT_SHARED.format(what=name))
        content = str(args["content"])
        reason = str(args.get("reason", ""))
        try:
            if args.get("mode") == "append":
                result = workspace.append(name, content, "agent", reason)
            else:
                result = workspace.write(name, content, "agent", reason)
        except WorkspaceError as refused:
            raise ToolError(str(refused)) from None
        return f"{result.name} saved as version {result.version} ({result.size} bytes)"

    return Tool(
        "update_workspace",
        "Replace or append to one of your workspace files. Caps (bytes of UTF-8): "
        f"{_caps_text()}. Over the cap the file is left unchanged; every version is kept.",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": WRITABLE},
                "content": {"type": "string"},
                "mode": {"type": "string", "enum": ["replace", "append"], "default": "replace"},
                "reason": {"type": "string", "description": "Why, in a few words (kept in the version log)"},
            },
            "required": ["name", "content"],
            "additionalProperties": False,
        },
        update_workspace,
    )


def correction_tool(learnings: Learnings, writes_shared: SharedWrites | None = None) -> Tool:
    shared = writes_shared or _always

    def record_correction(args: dict[str, Any]) -> str:
        if not shared():
            raise ToolError(NOT_SHARED.format(what="a correction"))
        new = learnings.record_correction(str(args["correction"]))
        return "correction recorded" if new else "already recorded: this correction is known"

    return Tool(
        "record_correction",
        "Call this whenever the operator, a user or a peer corrects you. State the correction as a "
        "rule for the future (what was wrong, what is right). It is shown in every later prompt.",
        {
            "type": "object",
            "properties": {"correction": {"type": "string", "minLength": 3}},
            "required": ["correction"],
            "additionalProperties": False,
        },
        record_correction,
    )

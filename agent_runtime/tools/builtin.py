"""The runtime's own tools: workspace files, capped identity files, corrections."""

from __future__ import annotations

from typing import Any

from agent_runtime.tools.registry import Tool, ToolError
from agent_runtime.workspace.files import WorkspaceFiles
from agent_runtime.workspace.learnings import Learnings
from agent_runtime.workspace.versioned import CAPS, READ_ONLY, WORKSPACE_FILES, Workspace, WorkspaceError

WRITABLE = [name for name in WORKSPACE_FILES if name not in READ_ONLY]


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


def workspace_tool(workspace: Workspace) -> Tool:
    def update_workspace(args: dict[str, Any]) -> str:
        name = str(args["name"])
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


def correction_tool(learnings: Learnings) -> Tool:
    def record_correction(args: dict[str, Any]) -> str:
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

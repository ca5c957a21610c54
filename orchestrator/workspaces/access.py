"""The operator's copy of an agent's workspace: reading it, and the one write path into it.

The capped identity files (SOUL.md, MEMORY.md, ...) live in `.flotilla/agents/<name>/`, an
orchestrator-owned folder that no unit mounts; every write (the operator's, and the agent's,
sent over its link) goes through `agent_runtime.Workspace` there: capped,
validated, atomic and versioned with its author. An accepted change is then handed to the
agent, which keeps a working copy in its own storage. The runtime-managed folders (learnings/,
memory/) live in the agent's storage: they are asked of the agent, read-only.
"""

from __future__ import annotations

import base64
import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from agent_runtime import (
    CAPS,
    SCREENSHOTS,
    WORKSPACE_FILES,
    Author,
    BadBinaryName,
    CapExceeded,
    InvalidContent,
    ReadOnlyFile,
    UnknownFile,
    UnknownVersion,
    VersionedBinaries,
    Workspace,
    WorkspaceError,
    is_disk_full,
    normalize_name,
)
from agent_runtime.protocol import (
    AgentOp,
    FileListing,
    FileText,
    WorkspaceCopy,
    WorkspaceFileCopy,
    WorkspaceWriteResult,
)
from orchestrator.config.wrong_names import unknown_agent
from orchestrator.errors import BadRequest, Failed, Forbidden, Invalid, NotFound, Refused, TooLarge
from orchestrator.events import EventBus, EventType
from orchestrator.fleet.view import FleetView
from orchestrator.running_agents.ask import AgentAsker
from orchestrator.running_agents.requests import AgentLinks
from orchestrator.state.paths import StatePaths
from orchestrator.workspaces.models import (
    FileKind,
    WorkspaceDiff,
    WorkspaceFileContent,
    WorkspaceFileRow,
    WorkspaceHistory,
    WorkspaceListing,
    WorkspaceVersionRow,
)
from orchestrator.workspaces.retention import prune_file_history

# Folders the runtime fills itself; the operator reads them here (learnings, daily memory logs).
EXTRA_FOLDERS: dict[str, FileKind] = {"learnings": "learning", "memory": "memory"}
MAX_EXTRA_READ = 1024 * 1024


@dataclass(frozen=True)
class AgentWorkspace:
    """One agent's workspace as the operator routes see it."""

    agent: str
    workspace: Workspace


def check_relative(name: str) -> tuple[str, ...]:
    """The path's parts, refusing anything that could leave the workspace folder (HTTP 400)."""
    pure = PurePosixPath(name)
    if not name or "\x00" in name or "\\" in name or pure.is_absolute() or ".." in pure.parts:
        raise BadRequest("path_escape", f"invalid file {name!r}: give a path inside the workspace")
    return tuple(part for part in pure.parts if part != ".")


def canonical_identity(name: str) -> str | None:
    """SOUL.md (or soul, SOUL) -> 'SOUL.md'; None when `name` is not one of the capped files."""
    parts = check_relative(name)
    if len(parts) != 1:
        return None
    try:
        return normalize_name(parts[0])
    except UnknownFile:
        return None


def extra_kind(name: str) -> FileKind:
    parts = check_relative(name)
    kind = EXTRA_FOLDERS.get(parts[0]) if len(parts) > 1 else None
    if kind is None:
        raise NotFound(
            "unknown_file",
            f"{name!r} is not a workspace file; known files: {', '.join(WORKSPACE_FILES)}, "
            "learnings/*.md, memory/*.md",
        )
    return kind


# ---------------------------------------------------------------------------------- listing


def _fill_pct(size: int, cap: int | None) -> float | None:
    return round(size * 100.0 / cap, 1) if cap else None


def _identity_rows(ws: Workspace) -> list[WorkspaceFileRow]:
    rows = []
    for info in ws.files():
        history = ws.history(info.name)
        last = history[-1] if history else None
        rows.append(
            WorkspaceFileRow(
                name=info.name,
                kind="identity",
                size=info.size,
                cap=info.cap,
                fill_pct=_fill_pct(info.size, info.cap),
                exists=info.exists,
                read_only=info.read_only,
                editable=True,
                version=last.version if last else None,
                updated_at=last.at if last else None,
                author=last.author if last else None,
            )
        )
    return rows


async def _extra_rows(asker: AgentAsker, agent: str) -> list[WorkspaceFileRow]:
    """The agent's learnings and daily logs, as the agent lists them; none when it cannot answer."""
    rows = []
    for folder, kind in EXTRA_FOLDERS.items():
        try:
            listing = await asker.ask(agent, AgentOp.FILES_LIST, {"folder": folder}, FileListing, wait=False)
        except Refused:
            continue
        rows += [
            WorkspaceFileRow(
                name=entry.path,
                kind=kind,
                size=entry.size,
                cap=None,
                fill_pct=None,
                exists=True,
                read_only=True,
                editable=False,
            )
            for entry in listing.files
            if not entry.is_dir
        ]
    return rows


def _screenshot_rows(ws: Workspace) -> list[WorkspaceFileRow]:
    """The browser's screenshots, saved on this side; each row names its newest version."""
    files = VersionedBinaries(ws.data_dir, SCREENSHOTS)
    rows = []
    for name in files.names():
        last = files.history(name)[-1]
        rows.append(
            WorkspaceFileRow(
                name=files.relative(name),
                kind="screenshot",
                size=last.size,
                cap=None,
                fill_pct=None,
                exists=True,
                read_only=True,
                editable=False,
                version=last.version,
                updated_at=last.at,
                author=last.author,
            )
        )
    return rows


async def list_files(asker: AgentAsker, access: AgentWorkspace) -> WorkspaceListing:
    rows = (
        _identity_rows(access.workspace)
        + await _extra_rows(asker, access.agent)
        + _screenshot_rows(access.workspace)
    )
    return WorkspaceListing(agent=access.agent, files=rows, total_bytes=sum(r.size for r in rows))


# ---------------------------------------------------------------------------------- reading


async def read_file(
    asker: AgentAsker, access: AgentWorkspace, name: str, version: int | None
) -> WorkspaceFileContent:
    if _screenshot(name) is not None:
        raise BadRequest(
            "binary_file",
            f"{name} is a PNG image, not text: fetch it from "
            f"/api/v1/agents/{access.agent}/screenshots/{name.removeprefix(SCREENSHOTS + '/')}?version=N",
        )
    canonical = canonical_identity(name)
    if canonical is None:
        return await _read_extra(asker, access, name, version)
    ws = access.workspace
    history = ws.history(canonical)
    latest = history[-1].version if history else None
    if version is None:
        content = ws.read(canonical)
    else:
        try:
            content = ws.read_version(canonical, version)
        except UnknownVersion as missing:
            raise NotFound("unknown_version", str(missing)) from None
    return WorkspaceFileContent(
        agent=access.agent,
        name=canonical,
        version=version if version is not None else latest,
        latest_version=latest,
        size=len(content.encode("utf-8")),
        cap=CAPS[canonical],
        content=content,
    )


async def _read_extra(
    asker: AgentAsker, access: AgentWorkspace, name: str, version: int | None
) -> WorkspaceFileContent:
    extra_kind(name)
    if version is not None:
        raise BadRequest("not_versioned", f"{name} is not versioned: omit ?version")
    relative = "/".join(check_relative(name))
    body = {"path": relative, "limit": MAX_EXTRA_READ}
    content = (await asker.ask(access.agent, AgentOp.FILES_READ, body, FileText)).content
    return WorkspaceFileContent(
        agent=access.agent,
        name=name,
        version=None,
        latest_version=None,
        size=len(content.encode("utf-8")),
        cap=None,
        content=content,
    )


def _require_identity(name: str) -> str:
    if _screenshot(name) is not None:
        raise BadRequest("binary_file", f"{name} is a PNG image: it has a history but no text diff")
    canonical = canonical_identity(name)
    if canonical is None:
        extra_kind(name)
        raise BadRequest("not_versioned", f"{name} is managed by the agent runtime and is not versioned")
    return canonical


def _screenshot(name: str) -> str | None:
    """The bare name of a screenshot path (screenshots/<name>.png); None for other paths."""
    parts = check_relative(name)
    if len(parts) != 2 or parts[0] != SCREENSHOTS:
        return None
    try:
        return VersionedBinaries(".", SCREENSHOTS).name_of(parts[1])
    except BadBinaryName as bad:
        raise NotFound("unknown_file", str(bad)) from None


def history(access: AgentWorkspace, name: str) -> WorkspaceHistory:
    shot = _screenshot(name)
    if shot is not None:
        files = VersionedBinaries(access.workspace.data_dir, SCREENSHOTS)
        versions = [WorkspaceVersionRow.model_validate(v.model_dump()) for v in files.history(shot)]
        if not versions:
            raise NotFound("unknown_file", f"agent {access.agent} has no screenshot {name}")
        return WorkspaceHistory(agent=access.agent, name=files.relative(shot), versions=versions)
    canonical = _require_identity(name)
    versions = [
        WorkspaceVersionRow.model_validate(v.model_dump()) for v in access.workspace.history(canonical)
    ]
    return WorkspaceHistory(agent=access.agent, name=canonical, versions=versions)


def diff(access: AgentWorkspace, name: str, a: int | None, b: int | None) -> WorkspaceDiff:
    """Unified diff between two versions; by default the last two (or empty -> v1)."""
    canonical = _require_identity(name)
    ws = access.workspace
    known = [v.version for v in ws.history(canonical)]
    if not known:
        raise NotFound("unknown_version", f"{canonical} has no recorded versions yet")
    newer = b if b is not None else known[-1]
    older = a if a is not None else max(0, _previous(known, newer))
    texts = [_version_text(ws, canonical, n) for n in (older, newer)]
    lines = difflib.unified_diff(
        texts[0].splitlines(keepends=True),
        texts[1].splitlines(keepends=True),
        fromfile=f"{canonical}@{older}",
        tofile=f"{canonical}@{newer}",
    )
    return WorkspaceDiff(agent=access.agent, name=canonical, a=older, b=newer, diff=_joined(lines))


def _previous(known: list[int], version: int) -> int:
    earlier = [n for n in known if n < version]
    return earlier[-1] if earlier else 0


def _version_text(ws: Workspace, canonical: str, version: int) -> str:
    if version == 0:
        return ""
    try:
        return ws.read_version(canonical, version)
    except UnknownVersion as missing:
        raise NotFound("unknown_version", str(missing)) from None


def _joined(lines: Iterable[str]) -> str:
    """Join diff lines, marking a line without newline the way `diff -u` does."""
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


# ---------------------------------------------------------------------------------- editing


def workspace_copy(access: AgentWorkspace, names: list[str] | None = None) -> WorkspaceCopy:
    """The operator's copy of the given files (all of them by default, the screenshots' newest
    versions included), with their versions."""
    ws = access.workspace
    files = []
    for name in names if names is not None else list(WORKSPACE_FILES):
        history = ws.history(name)
        files.append(
            WorkspaceFileCopy(
                name=name, content=ws.read(name), version=history[-1].version if history else None
            )
        )
    if names is None:
        files += _screenshot_copies(ws)
    return WorkspaceCopy(files=files)


def _screenshot_copies(ws: Workspace) -> list[WorkspaceFileCopy]:
    screenshots = VersionedBinaries(ws.data_dir, SCREENSHOTS)
    copies = []
    for name in screenshots.names():
        data = screenshots.read(name)
        if data is not None:
            copies.append(binary_copy(screenshots.relative(name), data))
    return copies


def binary_copy(name: str, data: bytes) -> WorkspaceFileCopy:
    return WorkspaceFileCopy(name=name, content="", binary_b64=base64.b64encode(data).decode("ascii"))


class WorkspaceAccess:
    """The operator's copies of the agents' workspaces, and the one write path into them."""

    def __init__(self, fleet: FleetView, paths: StatePaths, events: EventBus, links: AgentLinks) -> None:
        self._fleet = fleet
        self._paths = paths
        self._events = events
        self._links = links

    def open(self, agent: str) -> AgentWorkspace:
        fleet = self._fleet.current()
        if agent not in fleet.config.agents:
            raise NotFound("unknown_agent", unknown_agent(agent, fleet.name, fleet.config.agents))
        return AgentWorkspace(agent, Workspace(self._paths.agent_dir(agent)))

    def write_file(
        self,
        access: AgentWorkspace,
        name: str,
        content: str,
        reason: str,
        author: Author = "operator",
        source: str = "api",
    ) -> WorkspaceWriteResult:
        """The one write path into the operator's copy, for the operator and for the agent alike:
        caps, validation and versioning with the author; the change is then handed to the agent."""
        canonical = canonical_identity(name)
        if canonical is None:
            extra_kind(name)
            raise BadRequest("not_editable", f"{name} is managed by the agent runtime; it cannot be edited")
        result = _write(access, canonical, content, author, reason)
        prune_file_history(access.workspace, result.name, self._fleet.current().config.limits)
        self._events.publish(
            EventType.WORKSPACE_CHANGED,
            agent=access.agent,
            file=result.name,
            author=author,
            version=result.version,
            size=result.size,
            source=source,
        )
        if author != "agent":
            # The agent's own writes are mirrored by the agent once accepted.
            self.push_files(access, [result.name])
        return result

    def push_binary(self, agent: str, name: str, data: bytes) -> None:
        """Hand a binary file saved for the agent (a screenshot) to the agent, if connected."""
        self._links.push_workspace(agent, WorkspaceCopy(files=[binary_copy(name, data)]))

    def push_files(self, access: AgentWorkspace, names: list[str]) -> None:
        """Hand changed files to the agent, if its link is open (from any thread)."""
        self._links.push_workspace(access.agent, workspace_copy(access, names))


def _write(
    access: AgentWorkspace, canonical: str, content: str, author: Author, reason: str
) -> WorkspaceWriteResult:
    try:
        return access.workspace.write(canonical, content, author, reason or f"edited by the {author}")
    except CapExceeded as big:
        raise TooLarge(
            "cap_exceeded", str(big), [f"cap: {big.cap} bytes", f"size: {big.size} bytes"]
        ) from None
    except InvalidContent as bad:
        raise Invalid("invalid_content", str(bad), [bad.reason]) from None
    except ReadOnlyFile as locked:
        raise Forbidden("read_only", str(locked)) from None
    except WorkspaceError as other:
        raise BadRequest("refused", str(other)) from None
    except OSError as failed:
        if is_disk_full(failed):  # a 507 naming the path and the space left (api.storage_errors)
            raise OSError(failed.errno, failed.strerror, str(access.workspace.root / canonical)) from None
        # The agent's folder on the host may belong to the container's user.
        raise Failed(
            "write_failed", f"{canonical} could not be written on the host: {failed.strerror or failed}"
        ) from None

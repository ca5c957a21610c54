"""`flotilla events` and `flotilla workspace ls|cat|edit|diff|history`."""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click

from orchestrator.cli.client import ApiClient
from orchestrator.cli.common import client_for
from orchestrator.cli.errors import EXIT_INTERRUPTED, CliError
from orchestrator.cli.options import fleet_file_option, follow_option
from orchestrator.cli.terminal import echo, one_line, secho

# ------------------------------------------------------------------------------------ events


def format_event(event: dict[str, Any]) -> str:
    at = str(event.get("at", ""))
    try:
        clock = datetime.fromisoformat(at).astimezone().strftime("%H:%M:%S")
    except ValueError:
        clock = one_line(at[:8])
    data = event.get("data") or {}
    details = "  ".join(f"{one_line(str(k))}={_short(v)}" for k, v in data.items())
    agent = one_line(str(event.get("agent") or "-"))
    kind = one_line(str(event.get("type", "?")))
    return f"{clock}  {event.get('seq', 0):>6}  {kind:<20} {agent:<16} {details}".rstrip()


def _short(value: Any, limit: int = 60) -> str:
    text = one_line(value if isinstance(value, str) else json.dumps(value, default=str))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _echo_event(event: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(event))
    else:
        echo(format_event(event))


@click.command()
@fleet_file_option
@follow_option("Keep printing events as they happen.")
@click.option("--agent", help="Only events about this agent.")
@click.option(
    "-n",
    "--limit",
    type=click.IntRange(0, 1000),
    default=20,
    show_default=True,
    help="Recent events shown first.",
)
@click.option(
    "-t",
    "--type",
    "types",
    multiple=True,
    help="Only events of this type (repeatable); a prefix names a family: `budget` is budget.*.",
)
@click.option("--json", "as_json", is_flag=True, help="A JSON array; with -F, one JSON object per line.")
def events(
    fleet_file: Path, follow: bool, agent: str | None, limit: int, types: tuple[str, ...], as_json: bool
) -> None:
    """Show recent events (agent started, heartbeat, message, budget, workspace...); -F follows live."""
    with closing(client_for(fleet_file)) as client:
        _show_events(client, follow, agent, limit, list(types), as_json)


def of_types(event: dict[str, Any], types: list[str]) -> bool:
    kind = str(event.get("type", ""))
    return not types or any(kind == t or kind.startswith(t + ".") for t in types)


def _show_events(
    client: ApiClient, follow: bool, agent: str | None, limit: int, types: list[str], as_json: bool
) -> None:
    last = 0
    recent = (
        client.get("/api/v1/events/recent", agent=agent, limit=limit, type=types or None) if limit else []
    )
    if as_json and not follow:
        click.echo(json.dumps(recent, indent=2))
        return
    for event in recent:
        _echo_event(event, as_json)
        last = max(last, int(event["seq"]))
    if not follow:
        return
    if not limit:
        latest = client.get("/api/v1/events/recent", limit=1)
        last = int(latest[-1]["seq"]) if latest else 0
    try:
        for _, data in client.stream("GET", "/api/v1/events", timeout_s=None, agent=agent, after=last):
            event = json.loads(data)
            if of_types(event, types):
                _echo_event(event, as_json)
    except KeyboardInterrupt:
        raise SystemExit(EXIT_INTERRUPTED) from None


# --------------------------------------------------------------------------------- workspace


def _workspace_path(agent: str) -> str:
    return f"/api/v1/agents/{quote(agent, safe='')}/workspace"


def _file_path(agent: str, name: str) -> str:
    return f"{_workspace_path(agent)}/{quote(name, safe='/')}"


def _fill(row: dict[str, Any]) -> str:
    return f"{row['fill_pct']:.0f}%" if row.get("fill_pct") is not None else "-"


def _size(value: int | None) -> str:
    if value is None:
        return "-"
    return f"{value} B" if value < 1024 else f"{value / 1024:.1f} KiB"


def _table(headers: list[str], rows: list[list[str]]) -> None:
    rows = [[one_line(cell) for cell in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    echo("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for row in rows:
        echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


@click.group()
def workspace() -> None:
    """Inspect and edit an agent's workspace files (caps, versions, history, diffs)."""


_json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


@workspace.command("ls")
@fleet_file_option
@_json_option
@click.argument("agent")
def workspace_ls(fleet_file: Path, as_json: bool, agent: str) -> None:
    """List AGENT's workspace files with size, cap and how full each is."""
    with closing(client_for(fleet_file)) as client:
        listing = client.get(_workspace_path(agent))
    if as_json:
        click.echo(json.dumps(listing, indent=2))
        return
    rows = [
        [
            one_line(row["name"]),
            _size(row["size"]) if row["exists"] else "absent",
            _size(row["cap"]),
            _fill(row),
            f"v{row['version']}" if row.get("version") else "-",
            one_line(row.get("author") or "-"),
            "read-only" if row["read_only"] and row["kind"] == "identity" else "",
        ]
        for row in listing["files"]
    ]
    _table(["FILE", "SIZE", "CAP", "FILL", "VERSION", "BY", ""], rows)


@workspace.command("cat")
@fleet_file_option
@click.option("--version", "version", type=click.IntRange(1), help="Show this past version.")
@click.argument("agent")
@click.argument("file")
def workspace_cat(fleet_file: Path, version: int | None, agent: str, file: str) -> None:
    """Print FILE of AGENT (the live content, or --version N).

    The file is printed as it is, as `cat` does: pipe it through `less` or `cat -v` when the
    agent may have written control characters into it."""
    with closing(client_for(fleet_file)) as client:
        body = client.get(_file_path(agent, file), version=version)
    click.echo(body["content"], nl=False)


@workspace.command("history")
@fleet_file_option
@_json_option
@click.argument("agent")
@click.argument("file")
def workspace_history(fleet_file: Path, as_json: bool, agent: str, file: str) -> None:
    """Every version of FILE: who changed it (operator, agent, job, fleet.yaml), when, size and why."""
    with closing(client_for(fleet_file)) as client:
        body = client.get(f"{_file_path(agent, file)}/history")
    if as_json:
        click.echo(json.dumps(body, indent=2))
        return
    rows = [
        [
            f"v{v['version']}",
            v["author"],
            datetime.fromisoformat(v["at"]).astimezone().strftime("%Y-%m-%d %H:%M:%S"),
            _size(v["size"]),
            one_line(v.get("reason") or ""),
        ]
        for v in body["versions"]
    ]
    _table(["VERSION", "AUTHOR", "WHEN", "SIZE", "REASON"], rows)


@workspace.command("diff")
@fleet_file_option
@click.option("-a", "a", type=click.IntRange(0), help="The older version (0: empty). Default: previous.")
@click.option("-b", "b", type=click.IntRange(1), help="The newer version. Default: latest.")
@click.argument("agent")
@click.argument("file")
def workspace_diff(fleet_file: Path, a: int | None, b: int | None, agent: str, file: str) -> None:
    """Unified diff between two versions of FILE (default: the last two)."""
    with closing(client_for(fleet_file)) as client:
        body = client.get(f"{_file_path(agent, file)}/diff", a=a, b=b)
    if not body["diff"]:
        echo(f"v{body['a']} and v{body['b']} are identical", err=True)
        return
    for line in body["diff"].splitlines():
        color = "green" if line.startswith("+") else "red" if line.startswith("-") else None
        if line.startswith(("+++", "---")):
            color = None
        secho(line, fg="cyan" if line.startswith("@@") else color)


@workspace.command("edit")
@fleet_file_option
@click.option("--reason", default="", help="Why you change it (kept in the history).")
@click.argument("agent")
@click.argument("file")
def workspace_edit(fleet_file: Path, reason: str, agent: str, file: str) -> None:
    """Open FILE of AGENT in $EDITOR, then save it through the same caps and versions as the agent.

    A refused edit (over the cap, broken INTERFACE.md) prints the reason, keeps your text in a
    temporary file and exits with code 1; the file in force does not change.
    """
    with closing(client_for(fleet_file)) as client:
        current = client.get(_file_path(agent, file))
        draft, text = _edit_in_editor(current["name"], current["content"])
        if text == current["content"]:
            draft.unlink(missing_ok=True)
            echo(f"{current['name']}: no change", err=True)
            return
        _save(client, agent, current["name"], text, reason, draft)


def _edit_in_editor(name: str, content: str) -> tuple[Path, str]:
    """Edit a temporary copy; returns its path and the new text."""
    fd, tmp = tempfile.mkstemp(prefix=f"flotilla-{name.removesuffix('.md')}-", suffix=".md")
    draft = Path(tmp)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(content)
    try:
        click.edit(filename=str(draft))
    except click.ClickException as failed:
        draft.unlink(missing_ok=True)
        raise CliError(f"cannot run the editor: {failed.message} (set $EDITOR or $VISUAL)") from None
    return draft, draft.read_text(encoding="utf-8")


def _save(client: ApiClient, agent: str, name: str, text: str, reason: str, draft: Path) -> None:
    try:
        result = client.put(_file_path(agent, name), {"content": text, "reason": reason})
    except CliError as refused:
        echo(f"refused: {refused}", err=True)
        echo(f"your text is kept in {draft}", err=True)
        raise SystemExit(1) from None
    draft.unlink(missing_ok=True)
    echo(f"{result['name']}: saved as version {result['version']} ({result['size']} bytes)")


COMMANDS: list[click.Command] = [events, workspace]

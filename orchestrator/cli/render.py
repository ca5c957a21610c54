"""Tables the CLI prints."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from orchestrator.cli.terminal import markup_safe
from orchestrator.config.units import format_bytes

ASLEEP = "asleep (wakes on work)"
"""How a hibernated agent reads: sleeping is the default, not a fault."""


_HEALTH_STYLE = {
    "healthy": "green",
    "starting": "yellow",
    "unhealthy": "red",
    "down": "red",
    ASLEEP: "blue",
}


def _uptime(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


def _context(agent: dict[str, Any]) -> str:
    used, window = agent.get("context_used"), agent.get("context_window")
    if not used or not window:
        return "-"
    mark = "~" if agent.get("tokenizer") == "estimate" else ""
    return f"{mark}{100 * used / window:.0f}%"


def _inbox(agent: dict[str, Any]) -> str:
    dead = agent.get("dead_letters", 0)
    return f"{agent['pending']} [red]+{dead} dead[/red]" if dead else str(agent["pending"])


def _memory_search(agent: dict[str, Any]) -> str:
    """How the agent searches its memory, and with which embedding model."""
    model = agent.get("embedding_model")
    mode = agent.get("memory_mode") or ("hybrid" if model else "keyword")
    if mode == "unknown":
        mode = "not open yet"
    if agent.get("memory_problem"):
        mode = f"[red]fresh store: memory.db {markup_safe(agent['memory_problem'])}[/red]; {mode}"
    return f"{mode} ({model})" if model else f"{mode} (no embedding model)"


FOLD_ASLEEP_ABOVE = 50
"""From this many agents on, `ps` lists the sleeping agents with nothing to do as one line: a
fleet of a thousand is mostly asleep, and a table row costs the terminal about a millisecond."""


def fold_asleep(status: dict[str, Any], show_all: bool) -> tuple[dict[str, Any], int]:
    """The status with only the agents worth a row, and how many sleeping ones were left out."""
    agents = status["agents"]
    if show_all or len(agents) <= FOLD_ASLEEP_ABOVE:
        return status, 0

    def quiet(agent: dict[str, Any]) -> bool:
        return bool(
            agent["hibernated"]
            and not agent["pending"]
            and not agent.get("dead_letters")
            and not agent.get("wake_position")
            and not agent.get("held")
        )

    shown = [agent for agent in agents if not quiet(agent)]
    return status | {"agents": shown}, len(agents) - len(shown)


def broken(agent: dict[str, Any]) -> bool:
    """Neither asleep nor held by the operator, yet its unit is down or unhealthy."""
    return bool(
        not agent["hibernated"] and not agent.get("held") and agent["health"] in ("down", "unhealthy")
    )


def awake_summary(status: dict[str, Any]) -> str:
    """'12 of 1000 agents awake, 985 asleep (wake on work), 3 broken (max_awake 100); 3 wait to
    be woken: a, b, c'."""
    agents = status["agents"]
    asleep = sum(1 for agent in agents if agent["hibernated"])
    line = f"{status.get('awake', 0)} of {len(agents)} agents awake, {asleep} asleep (wake on work)"
    failing = sum(1 for agent in agents if broken(agent))
    line += f", [red]{failing} broken[/red]" if failing else ", 0 broken"
    if status.get("max_awake"):
        line += f" (max_awake {status['max_awake']})"
    queue = status.get("wake_queue") or []
    if queue:
        names = ", ".join(queued["agent"] for queued in queue[:10]) + (", ..." if len(queue) > 10 else "")
        line += f"; {len(queue)} wait to be woken: {names}"
    return line


def cooling_lines(status: dict[str, Any]) -> list[str]:
    """One line per model the fallback chains skip for now: which, for how long, and why."""
    return [
        f"model {markup_safe(cooling['model'])} skipped by the fallback chains for "
        f"{cooling['seconds_left']:.0f}s more, after {cooling['failures']} failed calls in a row: "
        f"{markup_safe(cooling['error'])}"
        for cooling in status.get("models_cooling", [])
    ]


def fleet_table(status: dict[str, Any]) -> Table:
    table = Table(title=f"fleet {status['fleet']} ({status['runtime']})", title_justify="left")
    with_node = any(agent.get("node") for agent in status["agents"])
    for column in (
        "agent",
        "state",
        "health",
        "restarts",
        "uptime",
        "memory",
        "inbox",
        "context",
        "spend today",
        "model",
        "memory search",
    ):
        table.add_column(column, justify="right" if column in {"restarts", "memory", "inbox"} else "left")
    if with_node:
        table.add_column("node")
    for agent in status["agents"]:
        asleep = agent["hibernated"] and agent["health"] == "down"
        state = "asleep" if agent["hibernated"] else agent["state"]
        if agent.get("wake_position"):
            state += f", waits to wake (#{agent['wake_position']})"
        if agent.get("held"):
            state = f"{agent['held']} (operator)" if agent["held"] == "stopped" else f"{state}, paused"
        if agent.get("busy"):
            state += " (busy)"
        health = ASLEEP if asleep else agent["health"]
        shown_health = f"[{_HEALTH_STYLE.get(health, 'white')}]{health}[/]"
        if agent.get("disk_full"):
            free = agent.get("disk_free_bytes")
            left = f" ({format_bytes(free)} free)" if free is not None else ""
            shown_health += f", [red]disk full{left}[/red]"
        memory = agent["memory_bytes"]
        node = [agent.get("node") or "-"] if with_node else []
        table.add_row(
            agent["name"],
            state,
            shown_health,
            str(agent["restarts"]),
            _uptime(agent["uptime_s"]),
            format_bytes(memory) if memory else "-",
            _inbox(agent),
            _context(agent),
            f"${agent['spend_today_usd']:.4f}",
            agent["model"],
            _memory_search(agent),
            *node,
        )
    return table

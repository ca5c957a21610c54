"""What an `exec` call tells the agent (text for its model) and the operator (an event)."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from orchestrator.backends.sandbox import LauncherReport, SandboxLimits, SandboxOutcome
from orchestrator.config.units import format_bytes


@dataclass(frozen=True)
class WrittenOutput:
    """One output file handed back: the version written, or why it was not."""

    name: str
    version: int | None = None
    size: int = 0
    problem: str = ""

    def line(self) -> str:
        if self.problem:
            return f"{self.name}: not written: {self.problem}"
        return f"{self.name}: written as version {self.version} ({self.size} bytes)"


def time_cap(limits: SandboxLimits) -> str:
    return (
        f"cut at the time cap of {limits.timeout_s:g} s (tools.exec.timeout_s); everything it ran was killed"
    )


def memory_cap(limits: SandboxLimits, kills: int) -> str:
    return (
        f"out of memory: the kernel killed {kills} process(es) at the cap of "
        f"{format_bytes(limits.memory_bytes)} (tools.exec.memory)"
    )


def verdict(outcome: SandboxOutcome, limits: SandboxLimits) -> tuple[bool, str]:
    """Whether the call worked (exit code 0 within its caps), and its first line."""
    report = outcome.report
    took = f"{outcome.duration_s:.2f} s"
    if report is None:
        if outcome.oom_killed:
            return False, f"{memory_cap(limits, 1)} · {took}"
        if outcome.killed_at_deadline:
            return False, f"{time_cap(limits)} · {took}"
        return False, f"the sandbox failed: {outcome.problem} · {took}"
    if not report.started:
        return False, report.problem
    if report.timed_out:
        return False, f"{time_cap(limits)} · {took}"
    if report.exit_code is None:
        line = f"killed by signal {report.signal}"
    else:
        line = f"exit code {report.exit_code}"
    if report.oom_kills:
        line += f" · {memory_cap(limits, report.oom_kills)}"
    return report.exit_code == 0 and not report.oom_kills, f"{line} · {took}"


def _stream(label: str, encoded: str, total: int) -> list[str]:
    kept = base64.b64decode(encoded)
    if not total:
        return []
    size = f"{total} bytes" if len(kept) == total else f"first {len(kept)} of {total} bytes, the rest cut"
    return [f"--- {label} ({size}) ---", kept.decode("utf-8", errors="replace").rstrip("\n")]


def agent_text(
    outcome: SandboxOutcome, limits: SandboxLimits, first_line: str, written: list[WrittenOutput]
) -> str:
    lines = [first_line]
    report = outcome.report
    if report is not None:
        lines += _stream("stdout", report.stdout, report.stdout_bytes)
        lines += _stream("stderr", report.stderr, report.stderr_bytes)
        if not report.stdout_bytes and not report.stderr_bytes:
            lines.append("(no output)")
    if written:
        lines.append("--- output files ---")
        lines += [output.line() for output in written]
    return "\n".join(lines)


def event_data(
    shown: str,
    outcome: SandboxOutcome,
    ok: bool,
    confined: bool,
    files: list[str],
    written: list[WrittenOutput],
) -> dict[str, Any]:
    report: LauncherReport | None = outcome.report
    return {
        "command": shown,
        "ok": ok,
        "exit_code": report.exit_code if report else None,
        "signal": report.signal if report else None,
        "timed_out": bool(report.timed_out if report else outcome.killed_at_deadline),
        "oom_kills": report.oom_kills if report else int(outcome.oom_killed),
        "duration_s": round(outcome.duration_s, 3),
        "stdout_bytes": report.stdout_bytes if report else 0,
        "stderr_bytes": report.stderr_bytes if report else 0,
        "files": files,
        "outputs": {output.name: output.version for output in written if not output.problem},
        "sandboxed": confined,
        "problem": outcome.problem,
    }

"""Runs one `exec` command and reports it as one JSON line on stdout.

This file is handed to `python3 -I -S -c` inside the sandbox (it is not imported there, so it works
with any agent image): standard library only, no orchestrator import. Its one argument is the
job as JSON (`SandboxJob.launcher_spec`).

The command runs in its own session with stdout and stderr on pipes, of which the first
`output_bytes` are kept and the rest counted. When it ends, or at the time cap, everything it left
running is killed: in a container (`kill_all`) every process but this one, which is the
container's first; on the host only the command's process group.
"""

import base64
import contextlib
import json
import os
import resource
import selectors
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

READ_BLOCK = 65536
DRAIN_S = 1.0
OOM_COUNTERS = ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")


def oom_kills() -> int:
    """Processes of this cgroup killed for memory so far (cgroup v2, then v1)."""
    for path in OOM_COUNTERS:
        try:
            with open(path) as counters:
                for line in counters:
                    name, _, value = line.partition(" ")
                    if name == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            continue
    return 0


def limits(memory_bytes: int | None) -> Callable[[], None]:
    """For a host process: the address-space cap is the only memory limit there is."""

    def apply() -> None:
        if memory_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def end_stragglers(child: subprocess.Popen[bytes], kill_all: bool) -> None:
    with contextlib.suppress(OSError):
        if kill_all:
            os.kill(-1, signal.SIGKILL)
        else:
            os.killpg(child.pid, signal.SIGKILL)


class Captured:
    """The first `cap` bytes of a stream, and how many there were."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += data[:room]


def collect(
    child: subprocess.Popen[bytes], spec: dict[str, Any], deadline: float
) -> tuple[Captured, Captured, bool]:
    """Read both pipes until they close; past the deadline, or once the command ended, whatever
    still runs is killed and the pipes drained. Returns (stdout, stderr, timed_out)."""
    assert child.stdout is not None and child.stderr is not None
    out, err = Captured(spec["output_bytes"]), Captured(spec["output_bytes"])
    streams = {child.stdout.fileno(): out, child.stderr.fileno(): err}
    selector = selectors.DefaultSelector()
    for fd in streams:
        selector.register(fd, selectors.EVENT_READ)
    timed_out = False
    stop_by: float | None = None
    while selector.get_map():
        now = time.monotonic()
        if stop_by is None:
            if child.poll() is not None:
                end_stragglers(child, spec["kill_all"])
                stop_by = now + DRAIN_S
            elif now >= deadline:
                timed_out = True
                end_stragglers(child, spec["kill_all"])
                stop_by = now + DRAIN_S
        elif now >= stop_by:
            break
        wait = min(0.05, max(0.0, (stop_by or deadline) - now))
        for key, _ in selector.select(wait):
            data = os.read(key.fd, READ_BLOCK)
            if data:
                streams[key.fd].add(data)
            else:
                selector.unregister(key.fd)
    selector.close()
    return out, err, timed_out


def read_outputs(spec: dict[str, Any]) -> tuple[dict[str, str], list[str], list[str]]:
    found: dict[str, str] = {}
    missing: list[str] = []
    too_large: list[str] = []
    cap = spec["output_file_bytes"]
    for name in spec["outputs"]:
        path = os.path.join(spec["work"], name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            missing.append(name)
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                missing.append(name)
                continue
            data = os.read(fd, cap + 1)
        finally:
            os.close(fd)
        if len(data) > cap:
            too_large.append(name)
        else:
            found[name] = base64.b64encode(data).decode("ascii")
    return found, missing, too_large


def run(spec: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": spec["work"],
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    if spec["inputs"]:
        env["WORKSPACE"] = spec["inputs"]
    # The image's own Python packages (its PYTHONPATH) stay importable for the command.
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    try:
        child = subprocess.Popen(
            spec["argv"],
            cwd=spec["work"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            # The launcher has no other thread, the one case where preexec_fn is safe.
            preexec_fn=None if spec["kill_all"] else limits(spec["memory_bytes"]),  # noqa: PLW1509
        )
    except OSError as failed:
        return {"started": False, "problem": f"the command could not be started: {failed.strerror or failed}"}
    out, err, timed_out = collect(child, spec, started + spec["timeout_s"])
    code = child.wait()
    duration = time.monotonic() - started
    outputs, missing, too_large = read_outputs(spec)
    return {
        "started": True,
        "exit_code": code if code >= 0 else None,
        "signal": -code if code < 0 else None,
        "timed_out": timed_out,
        "oom_kills": oom_kills() if spec["kill_all"] else 0,
        "duration_s": round(duration, 4),
        "stdout": base64.b64encode(bytes(out.kept)).decode("ascii"),
        "stderr": base64.b64encode(bytes(err.kept)).decode("ascii"),
        "stdout_bytes": out.total,
        "stderr_bytes": err.total,
        "outputs": outputs,
        "missing": missing,
        "too_large": too_large,
    }


def main() -> None:
    report = run(json.loads(sys.argv[-1]))
    sys.stdout.write("\n" + json.dumps(report) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()

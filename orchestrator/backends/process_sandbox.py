"""`exec` jobs of the process runtime: plain host processes, which are no sandbox at all.

They run as the orchestrator's user, with the host's network and files, in a temporary work
folder; only the time cap and an address-space cap (RLIMIT_AS) apply, no pid or CPU cap. The
exec tool refuses to use this unless the agent's `tools.exec.allow_unsandboxed` is true.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from orchestrator.backends.base import BackendError
from orchestrator.backends.sandbox import (
    CodeSandbox,
    SandboxJob,
    SandboxOutcome,
    launcher_source,
    parse_report,
)

GRACE_S = 5.0


class HostProcessRunner(CodeSandbox):
    confined = False
    description = (
        "the process runtime cannot sandbox code: a command would run as the orchestrator's user, "
        "with the host's network and files, and no pid or CPU cap"
    )

    def run(self, job: SandboxJob) -> SandboxOutcome:
        work = Path(tempfile.mkdtemp(prefix="flotilla-exec-"))
        started = time.monotonic()
        spec = job.launcher_spec(str(work), str(job.inputs_dir) if job.inputs_dir else None, kill_all=False)
        try:
            finished = subprocess.run(
                [sys.executable, "-I", "-S", "-c", launcher_source(), spec],
                cwd=work,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=job.limits.timeout_s + GRACE_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return SandboxOutcome(None, time.monotonic() - started, True, problem="the command did not end")
        except OSError as failed:
            raise BackendError(f"cannot run the command of agent {job.agent}: {failed}") from None
        finally:
            shutil.rmtree(work, ignore_errors=True)
        report = parse_report(finished.stdout[: job.report_cap])
        if isinstance(report, str):
            return SandboxOutcome(None, time.monotonic() - started, problem=report)
        return SandboxOutcome(report, time.monotonic() - started)

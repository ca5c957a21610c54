"""Reading fleet.yaml: what a hostile file costs before it is refused, and what a large one costs.

Each case runs in a fresh interpreter that first imports the loader (baseline peak RSS), then
loads the file; reported are the wall time of `load_fleet` and how much the peak RSS grew.

1. An alias expansion bomb: 12 levels of nine aliases each (9**11 values once expanded).
2. 50,000 nested flow sequences.
3. The example fleet (3 agents, contracts in files).
4. A fleet of 200 agents, each talking to two peers and with a one-operation contract.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PROBE = """
import json, resource, sys, time
from orchestrator.config.loader import load_fleet
from orchestrator.config.fleet import ConfigError
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
# Registered inside the timing: the checks' modules are part of what loading costs.
from orchestrator.fleet.validation import register_fleet_checks
register_fleet_checks()
try:
    load_fleet(sys.argv[1])
    outcome = "loaded"
except ConfigError as refused:
    outcome = "refused: " + refused.problems[0].message
elapsed = time.perf_counter() - started
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": elapsed, "grew_kib": after - before, "outcome": outcome}))
"""


def bomb() -> str:
    lines = ["version: 1", "fleet: demo", "agents:", "  alpha:", '    role: &a0 "lol"']
    lines.append("    models: &a1 [*a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0]")
    for level in range(2, 12):
        lines.append(f"    x{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def deep() -> str:
    return "version: 1\nfleet: demo\nagents:\n  alpha:\n    models: " + "[" * 50_000 + "]" * 50_000 + "\n"


def large(agents: int) -> str:
    lines = ["version: 1", "fleet: large", "agents:"]
    for index in range(agents):
        peers = [f"agent-{(index + step) % agents}" for step in (1, 2)]
        lines += [
            f"  agent-{index}:",
            f"    role: worker number {index}",
            f"    talks_to: [{', '.join(peers)}]",
            "    interface: |",
            "      ---",
            "      operations:",
            "        - name: work",
            "          input: {type: object, properties: {task: {type: string}}}",
            "      ---",
        ]
    return "\n".join(lines) + "\n"


def measure(path: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def run(quick: bool) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    with tempfile.TemporaryDirectory() as folder:
        cases = {
            "alias bomb (9**11 values)": bomb(),
            "50,000 nested sequences": deep(),
            "200 agents": large(50 if quick else 200),
        }
        paths = {name: Path(folder) / f"case{index}.yaml" for index, name in enumerate(cases)}
        for name, text in cases.items():
            paths[name].write_text(text)
        paths["example fleet (3 agents)"] = REPO / "fleet.yaml"
        for name, path in paths.items():
            result = measure(path)
            seconds = float(str(result["seconds"]))
            grew = int(str(result["grew_kib"])) / 1024
            hostile = name.startswith(("alias", "50,000"))
            target = "refused, < 1 s, < 100 MiB" if hostile else ""
            rows.append(
                {
                    "benchmark": "fleet_file",
                    "metric": f"{name}: {result['outcome']}"[:120],
                    "value": "",
                    "target": "",
                }
            )
            rows.append(
                {
                    "benchmark": "fleet_file",
                    "metric": f"{name}: load time",
                    "value": f"{seconds * 1000:.0f} ms",
                    "target": target,
                }
            )
            rows.append(
                {
                    "benchmark": "fleet_file",
                    "metric": f"{name}: peak RSS growth",
                    "value": f"{grew:.1f} MiB",
                    "target": target,
                }
            )
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(f"{row['metric']:<70} {row['value']:>10}  {row['target']}")

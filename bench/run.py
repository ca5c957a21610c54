"""Run every benchmark in bench/ and write one markdown table.

    python -m bench.run            # full runs
    python -m bench.run --quick    # each benchmark in under a minute
    python -m bench.run --only memory,broker

Each `bench/bench_<topic>.py` exposes `run(quick: bool) -> list[dict[str, str]]` returning rows
with the keys benchmark, metric, value and target.
"""

from __future__ import annotations

import argparse
import importlib
import platform
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results"
Row = dict[str, str]


def topics() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in BENCH_DIR.glob("bench_*.py"))


def run_topic(topic: str, quick: bool) -> list[Row]:
    module = importlib.import_module(f"bench.bench_{topic}")
    started = time.monotonic()
    print(f"==> {topic}", flush=True)
    try:
        rows: list[Row] = module.run(quick)
    except Exception as exc:  # noqa: BLE001 - one failing benchmark must not hide the others' figures
        traceback.print_exc()
        rows = [
            {"benchmark": topic, "metric": "error", "value": f"{type(exc).__name__}: {exc}", "target": ""}
        ]
    print(f"    {topic} took {time.monotonic() - started:.0f}s", flush=True)
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| benchmark | metric | value | target |", "|---|---|---|---|"]
    lines += [f"| {r['benchmark']} | {r['metric']} | {r['value']} | {r.get('target', '')} |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes; each benchmark under a minute")
    parser.add_argument("--only", default="", help=f"comma-separated topics among: {', '.join(topics())}")
    parser.add_argument("--out", type=Path, default=None, help="where to write the table (markdown)")
    args = parser.parse_args()
    chosen = [t for t in args.only.split(",") if t] or topics()
    unknown = sorted(set(chosen) - set(topics()))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(topics())}")
    rows = [row for topic in chosen for row in run_topic(topic, args.quick)]
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H%M%SZ")
    header = f"# Flotilla benchmarks ({'quick' if args.quick else 'full'}), {stamp}\n\n"
    header += f"{platform.node()} · {platform.machine()} · Python {platform.python_version()}\n\n"
    report = header + table(rows) + "\n"
    out = args.out or RESULTS / f"bench-{stamp}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)
    print(report)
    print(f"written to {out}")
    sys.exit(1 if any(r["metric"] == "error" for r in rows) else 0)


if __name__ == "__main__":
    main()

"""Run every benchmark in bench/ and write one markdown table.

    python -m bench.run            # full runs
    python -m bench.run --quick    # each benchmark in under a minute
    python -m bench.run --only memory,broker
    python -m bench.run --slow     # also the slow ones (capacity: fleets of up to 200 agents)

The table goes to bench/results/; a full run also merges its rows into docs/benchmarks.md (the
rows of each benchmark it ran replace that benchmark's rows there; a benchmark that failed keeps
its old rows).

Each `bench/bench_<topic>.py` exposes `run(quick: bool) -> list[dict[str, str]]` returning rows
with the keys benchmark, metric, value and target.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

from bench.docs_table import TableNotFound, row_line, write_rows
from bench.fleet_run import compile_bytecode

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "results"
DOCS_PAGE = BENCH_DIR.parent / "docs" / "benchmarks.md"
Row = dict[str, str]
SLOW = frozenset({"capacity"})
"""Run only when asked (--slow or --only): several minutes each."""


def topics() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in BENCH_DIR.glob("bench_*.py"))


def load_average() -> str:
    """The machine's 1, 5 and 15-minute load averages (2 cores shared with other work here)."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def run_topic(topic: str, quick: bool) -> list[Row]:
    module = importlib.import_module(f"bench.bench_{topic}")
    started = time.monotonic()
    load_before = load_average()
    print(f"==> {topic} (load {load_before})", flush=True)
    try:
        rows: list[Row] = module.run(quick)
    except Exception as exc:  # noqa: BLE001 - one failing benchmark must not hide the others' figures
        traceback.print_exc()
        rows = [
            {"benchmark": topic, "metric": "error", "value": f"{type(exc).__name__}: {exc}", "target": ""}
        ]
    load_after = load_average()
    print(f"    {topic} took {time.monotonic() - started:.0f}s (load {load_after})", flush=True)
    rows.append(
        {
            "benchmark": topic,
            "metric": "machine load average (1/5/15 min) before / after",
            "value": f"{load_before} / {load_after}",
            "target": "",
        }
    )
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| benchmark | metric | value | target |", "|---|---|---|---|"]
    lines += [row_line(r) for r in rows]
    return "\n".join(lines)


def write_docs(page: Path | None, rows: list[Row], skip: bool) -> None:
    """Merge the rows into the docs page's table; a quick run's figures do not go there unasked."""
    if page is None or skip:
        return
    failed = {r["benchmark"] for r in rows if r["metric"] == "error"}
    try:
        write_rows(page, [r for r in rows if r["benchmark"] not in failed])
    except (OSError, TableNotFound) as exc:
        print(f"error: the rows were not written into {page}: {exc}", file=sys.stderr)
        return
    print(f"rows written into the table of {page}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes; each benchmark under a minute")
    parser.add_argument("--only", default="", help=f"comma-separated topics among: {', '.join(topics())}")
    parser.add_argument(
        "--slow", action="store_true", help=f"also run the slow ones: {', '.join(sorted(SLOW))}"
    )
    parser.add_argument("--out", type=Path, default=None, help="where to write the table (markdown)")
    parser.add_argument(
        "--docs",
        type=Path,
        default=None,
        help=f"the page whose table gets this run's rows (default for a full run: {DOCS_PAGE})",
    )
    parser.add_argument("--no-docs", action="store_true", help="write no rows into the docs page")
    args = parser.parse_args()
    chosen = [t for t in args.only.split(",") if t] or [t for t in topics() if args.slow or t not in SLOW]
    unknown = sorted(set(chosen) - set(topics()))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(topics())}")
    compile_bytecode()
    load_before = load_average()
    rows = [row for topic in chosen for row in run_topic(topic, args.quick)]
    load_after = load_average()
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H%M%SZ")
    header = f"# Flotilla benchmarks ({'quick' if args.quick else 'full'}), {stamp}\n\n"
    header += f"{platform.node()} · {platform.machine()} · {os.cpu_count()} cores · Python {platform.python_version()}\n\n"
    header += f"Load average (1/5/15 min) before the run: {load_before}; after: {load_after}\n\n"
    report = header + table(rows) + "\n"
    out = args.out or RESULTS / f"bench-{stamp}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)
    print(report)
    print(f"written to {out}")
    write_docs(args.docs or (None if args.quick else DOCS_PAGE), rows, args.no_docs)
    sys.exit(1 if any(r["metric"] == "error" for r in rows) else 0)


if __name__ == "__main__":
    main()

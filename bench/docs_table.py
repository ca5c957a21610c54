"""Write a run's rows into the benchmark table of docs/benchmarks.md.

The page keeps rows from several runs (a full run, later `--only` runs of single benchmarks), so a
run replaces only the rows of the benchmarks it measured: each benchmark's new rows take the place
of its old ones, and a benchmark the page did not have yet is added at the end.
"""

from __future__ import annotations

from pathlib import Path

Row = dict[str, str]
START = "<!-- bench.run: table start -->"
END = "<!-- bench.run: table end -->"
HEADER = ["| benchmark | metric | value | target |", "|---|---|---|---|"]


class TableNotFound(ValueError):
    """The page has no table markers to write between."""


def row_line(row: Row) -> str:
    return f"| {row['benchmark']} | {row['metric']} | {row['value']} | {row.get('target', '')} |"


def benchmark_of(line: str) -> str:
    """The first cell of a table line."""
    return line.strip().strip("|").split("|", 1)[0].strip()


def merged_lines(old: list[str], rows: list[Row]) -> list[str]:
    """The table's data lines with `rows` in place of the old rows of the same benchmarks."""
    new_by_benchmark: dict[str, list[str]] = {}
    for row in rows:
        new_by_benchmark.setdefault(row["benchmark"], []).append(row_line(row))
    merged: list[str] = []
    for line in old:
        benchmark = benchmark_of(line)
        if benchmark not in new_by_benchmark:
            merged.append(line)
        else:
            merged += new_by_benchmark.pop(benchmark)
            new_by_benchmark[benchmark] = []  # its later old rows are dropped
    for lines in new_by_benchmark.values():
        merged += lines
    return merged


def update_page(text: str, rows: list[Row]) -> str:
    """`text` with the rows between its table markers merged with `rows`."""
    head, start, rest = text.partition(START)
    body, end, tail = rest.partition(END)
    if not start or not end:
        raise TableNotFound(f"no '{START}' ... '{END}' markers around a table")
    old = [line for line in body.splitlines() if line.startswith("|")][len(HEADER) :]
    table = "\n".join([*HEADER, *merged_lines(old, rows)])
    return f"{head}{START}\n{table}\n{END}{tail}"


def write_rows(page: Path, rows: list[Row]) -> None:
    page.write_text(update_page(page.read_text(encoding="utf-8"), rows), encoding="utf-8")

"""bench.run's rows merged into the table of docs/benchmarks.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.docs_table import END, START, TableNotFound, update_page, write_rows

PAGE = f"""# Benchmarks

Notes written by hand.

{START}
| benchmark | metric | value | target |
|---|---|---|---|
| broker | ask p99 | 10.0 ms | <= 25 ms |
| broker | throughput | 655 asks/s |  |
| gateway | overhead | 3.16 ms | < 10 |
{END}

After the table.
"""


def rows_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| ") and "benchmark |" not in line]


def test_a_benchmark_run_again_replaces_its_rows_and_keeps_the_others() -> None:
    new = [
        {"benchmark": "broker", "metric": "ask p99", "value": "9.1 ms", "target": "<= 25 ms"},
        {"benchmark": "image", "metric": "size", "value": "148 MiB", "target": ""},
    ]
    page = update_page(PAGE, new)
    assert rows_of(page) == [
        "| broker | ask p99 | 9.1 ms | <= 25 ms |",
        "| gateway | overhead | 3.16 ms | < 10 |",
        "| image | size | 148 MiB |  |",
    ]
    assert page.startswith("# Benchmarks\n\nNotes written by hand.\n")
    assert page.endswith(f"{END}\n\nAfter the table.\n")


def test_merging_the_same_rows_twice_changes_nothing() -> None:
    new = [{"benchmark": "gateway", "metric": "overhead", "value": "3.0 ms", "target": "< 10"}]
    once = update_page(PAGE, new)
    assert update_page(once, new) == once


def test_a_page_without_markers_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text("# no table here\n")
    with pytest.raises(TableNotFound, match="markers"):
        write_rows(page, [{"benchmark": "b", "metric": "m", "value": "1", "target": ""}])
    assert page.read_text() == "# no table here\n"


def test_the_docs_page_has_the_markers_and_every_benchmark_of_the_readme_history() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"
    text = page.read_text()
    assert update_page(text, []) == text
    benchmarks = {line.split("|")[1].strip() for line in rows_of(text)}
    assert {
        "broker",
        "gateway",
        "startup N=10",
        "fleet_scale 1,000 / 100 awake",
        "soak 30 days",
    } <= benchmarks

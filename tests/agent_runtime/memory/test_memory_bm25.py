"""BM25 over the workspace's markdown: scores, passages, and an index that only re-reads what changed."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from agent_runtime.memory.bm25 import WorkspaceIndex, split_passages


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def touch_later(path: Path) -> None:
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 5_000_000_000))


def test_scores_follow_the_bm25_formula(tmp_path: Path) -> None:
    write(tmp_path / "a.md", "apple apple banana")
    write(tmp_path / "b.md", "banana cherry")
    write(tmp_path / "c.md", "cherry durian elderberry fig")
    index = WorkspaceIndex(tmp_path, refresh_interval_s=0)
    hits = index.search("apple", k=3)
    n, df, avgdl = 3, 1, (3 + 2 + 4) / 3
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    expected = idf * 2 * 2.5 / (2 + 1.5 * (1 - 0.75 + 0.75 * 3 / avgdl))
    assert [h.path for h in hits] == ["a.md"]
    assert hits[0].score == pytest.approx(expected)
    assert index.search("banana cherry", k=3)[0].path == "b.md"


def test_only_changed_files_are_tokenized_again(tmp_path: Path) -> None:
    write(tmp_path / "notes.md", "# Notes\nThe deploy key lives in the vault\n")
    write(tmp_path / "projects" / "apollo.md", "# Apollo\nLaunch window opens in June\n")
    index = WorkspaceIndex(tmp_path, refresh_interval_s=0)
    assert index.search("launch window")[0].path == "projects/apollo.md"
    assert index.files_tokenized == 2

    # Searching again with nothing changed reads nothing.
    stats = index.refresh()
    assert (stats.files, stats.read, stats.reindexed) == (2, 0, 0)

    # A touched file with the same content is read (hashed) but not tokenized again.
    touch_later(tmp_path / "notes.md")
    stats = index.refresh()
    assert (stats.read, stats.reindexed) == (1, 0)
    assert index.files_tokenized == 2

    # A changed file is re-indexed: old words gone, new words found, the other file untouched.
    write(tmp_path / "projects" / "apollo.md", "# Apollo\nLaunch moved to September\n")
    touch_later(tmp_path / "projects" / "apollo.md")
    hits = index.search("June")
    assert hits == []
    assert index.search("September")[0].path == "projects/apollo.md"
    assert index.files_tokenized == 3

    # Deleted and new files.
    (tmp_path / "notes.md").unlink()
    write(tmp_path / "people.md", "Ada runs the vault")
    stats = index.refresh()
    assert (stats.removed, stats.reindexed) == (1, 1)
    assert [h.path for h in index.search("vault")] == ["people.md"]


def test_passages_point_at_lines(tmp_path: Path) -> None:
    body = (
        "# Top\nintro line\n\n## Section two\n"
        + "\n".join(f"line {i} filler" for i in range(30))
        + "\nzebra here\n"
    )
    write(tmp_path / "long.md", body)
    index = WorkspaceIndex(tmp_path, refresh_interval_s=0)
    hit = index.search("zebra")[0]
    lines = body.splitlines()
    assert "zebra here" in lines[hit.start_line - 1 : hit.end_line]
    assert hit.end_line - hit.start_line < 20
    assert [p[:2] for p in split_passages("# A\nx\n# B\ny\n")] == [(1, 2), (3, 4)]


def test_fact_lines_of_the_daily_log_are_left_to_the_store(tmp_path: Path) -> None:
    write(
        tmp_path / "memory" / "2025-05-01.md",
        "# 2025-05-01\n\n- 09:00:00 · operator · replied about the quarterly budget\n"
        "- 09:01:00 · memory · [fact 3] The quarterly budget is 40k (user_stated, work)\n",
    )
    index = WorkspaceIndex(tmp_path, refresh_interval_s=0)  # fact lines are skipped by default
    hit = index.search("quarterly budget")[0]
    assert "replied about the quarterly budget" in hit.text
    assert "40k" not in hit.text
    assert index.search("40k") == []


def test_hidden_folders_and_other_files_are_ignored(tmp_path: Path) -> None:
    write(tmp_path / ".git" / "x.md", "secret word")
    write(tmp_path / "data.txt", "secret word")
    assert WorkspaceIndex(tmp_path, refresh_interval_s=0).search("secret") == []
    assert WorkspaceIndex(tmp_path / "missing").search("anything") == []

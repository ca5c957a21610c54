"""BM25 (k1 = 1.5, b = 0.75) over the workspace's markdown files, kept current incrementally.

Each file is cut into passages (a heading starts one; long sections are split every
`MAX_PASSAGE_LINES` lines) and each passage is a BM25 document, so a hit points at lines.
The index keeps, per file, its size, mtime and SHA-256 and the passages it produced. A
refresh stats every file; only a file whose size or mtime moved is read, and only one whose
content hash changed is re-tokenized, its old postings removed and new ones added. A query
reads the postings of its terms only.

The index lives in memory: rebuilding it at start-up reads the workspace once. By default the
daily log's fact lines (`factlog`) are not indexed: the fact store answers for them, with
provenance, and a forgotten fact must not come back through its old log line.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from agent_runtime.memory.factlog import is_fact_line
from agent_runtime.memory.text import tokens

K1 = 1.5
B = 0.75
MAX_PASSAGE_LINES = 20
SNIPPET_CHARS = 400


class FileHit(BaseModel):
    path: str
    start_line: int
    end_line: int
    text: str
    score: float


@dataclass
class _Passage:
    path: str
    start_line: int
    end_line: int
    text: str
    terms: Counter[str]
    length: int


@dataclass
class _FileState:
    mtime_ns: int
    size: int
    sha256: str
    passages: list[int] = field(default_factory=list)


@dataclass
class RefreshStats:
    files: int = 0
    read: int = 0
    reindexed: int = 0
    removed: int = 0


def split_passages(
    text: str, skip_line: Callable[[str], bool] | None = None
) -> Iterator[tuple[int, int, str]]:
    """(first line, last line, text) of each passage, line numbers from 1."""
    lines = text.splitlines()
    start, buffer = 1, []  # type: int, list[str]

    def flush(end: int) -> Iterator[tuple[int, int, str]]:
        body = "\n".join(buffer).strip()
        if body:
            yield start, end, body

    for number, line in enumerate(lines, start=1):
        starts_section = line.lstrip().startswith("#") and buffer
        if starts_section or len(buffer) >= MAX_PASSAGE_LINES:
            yield from flush(number - 1)
            start, buffer = number, []
        buffer.append("" if skip_line is not None and skip_line(line) else line)
    yield from flush(len(lines))


class WorkspaceIndex:
    def __init__(
        self,
        root: Path,
        *,
        k1: float = K1,
        b: float = B,
        skip_line: Callable[[str], bool] | None = is_fact_line,
        refresh_interval_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = Path(root)
        self.k1 = k1
        self.b = b
        self.skip_line = skip_line
        self.refresh_interval_s = refresh_interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._files: dict[str, _FileState] = {}
        self._passages: dict[int, _Passage] = {}
        self._postings: dict[str, dict[int, int]] = {}
        self._total_length = 0
        self._next_id = 1
        self._refreshed_at: float | None = None
        self.files_tokenized = 0

    # Keeping current

    def _walk(self) -> Iterator[Path]:
        if not self.root.is_dir():
            return
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                if name.endswith(".md") and not name.startswith("."):
                    yield Path(folder) / name

    def refresh(self) -> RefreshStats:
        """Bring the index in line with the files on disk, touching only files that changed."""
        stats = RefreshStats()
        with self._lock:
            seen: set[str] = set()
            for path in self._walk():
                relative = path.relative_to(self.root).as_posix()
                try:
                    info = path.stat()
                except FileNotFoundError:
                    continue
                seen.add(relative)
                stats.files += 1
                state = self._files.get(relative)
                if state is not None and (state.mtime_ns, state.size) == (info.st_mtime_ns, info.st_size):
                    continue
                try:
                    data = path.read_bytes()
                except FileNotFoundError:
                    seen.discard(relative)
                    continue
                stats.read += 1
                digest = hashlib.sha256(data).hexdigest()
                if state is not None and state.sha256 == digest:
                    state.mtime_ns, state.size = info.st_mtime_ns, info.st_size
                    continue
                self._drop_file(relative)
                self._add_file(relative, data, _FileState(info.st_mtime_ns, info.st_size, digest))
                stats.reindexed += 1
            for gone in [name for name in self._files if name not in seen]:
                self._drop_file(gone)
                stats.removed += 1
            self._refreshed_at = self._clock()
        return stats

    def _add_file(self, relative: str, data: bytes, state: _FileState) -> None:
        self.files_tokenized += 1
        text = data.decode("utf-8", errors="replace")
        for start, end, body in split_passages(text, self.skip_line):
            terms = Counter(tokens(body))
            if not terms:
                continue
            passage_id = self._next_id
            self._next_id += 1
            length = sum(terms.values())
            self._passages[passage_id] = _Passage(relative, start, end, body, terms, length)
            self._total_length += length
            for term, count in terms.items():
                self._postings.setdefault(term, {})[passage_id] = count
            state.passages.append(passage_id)
        self._files[relative] = state

    def _drop_file(self, relative: str) -> None:
        state = self._files.pop(relative, None)
        if state is None:
            return
        for passage_id in state.passages:
            passage = self._passages.pop(passage_id)
            self._total_length -= passage.length
            for term in passage.terms:
                postings = self._postings.get(term)
                if postings is not None:
                    postings.pop(passage_id, None)
                    if not postings:
                        del self._postings[term]

    def _maybe_refresh(self) -> None:
        if self._refreshed_at is None or self._clock() - self._refreshed_at >= self.refresh_interval_s:
            self.refresh()

    # Searching

    def search(self, query: str, k: int = 5) -> list[FileHit]:
        """The k passages with the highest BM25 score for the query's words (score > 0 only)."""
        self._maybe_refresh()
        terms = list(dict.fromkeys(tokens(query)))
        with self._lock:
            count = len(self._passages)
            if not count or not terms:
                return []
            average = self._total_length / count
            scores: dict[int, float] = {}
            for term in terms:
                postings = self._postings.get(term)
                if not postings:
                    continue
                idf = math.log(1.0 + (count - len(postings) + 0.5) / (len(postings) + 0.5))
                for passage_id, frequency in postings.items():
                    length = self._passages[passage_id].length
                    norm = frequency + self.k1 * (1.0 - self.b + self.b * length / average)
                    scores[passage_id] = (
                        scores.get(passage_id, 0.0) + idf * frequency * (self.k1 + 1.0) / norm
                    )
            best = heapq.nlargest(k, scores.items(), key=lambda item: item[1])
            return [self._hit(passage_id, score) for passage_id, score in best if score > 0]

    def _hit(self, passage_id: int, score: float) -> FileHit:
        passage = self._passages[passage_id]
        text = passage.text if len(passage.text) <= SNIPPET_CHARS else passage.text[: SNIPPET_CHARS - 1] + "…"
        return FileHit(
            path=passage.path,
            start_line=passage.start_line,
            end_line=passage.end_line,
            text=text,
            score=score,
        )

    @property
    def documents(self) -> int:
        return len(self._passages)

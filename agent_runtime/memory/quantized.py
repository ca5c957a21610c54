"""Every active fact's int8 code held in memory as one contiguous matrix, scanned in one call.

The search over every fact reads this matrix, not the database: simsimd's int8 cosine kernel
(SIMD, on the calling thread only) compares the query with all rows in one pass over
`dims` bytes per fact, a quarter of what a float32 scan reads, and the rows it ranks best
go to the exact float32 comparison in SQLite. Without simsimd (`KERNEL_AVAILABLE` false) the
caller scans the float32 vectors in SQL instead: slower, never less exact.

The matrix is a cache of the `fact_codes` table, filled from it when first needed and kept in
step by the index as facts enter and leave; the index drops it when a transaction rolls back
or another connection writes, and the next search fills it again. It is ordinary memory, which
a container's limit counts and cannot reclaim: past a budget (`memory_budget`, by default a
share of that limit) the index leaves it out and scans in SQL.
"""

from __future__ import annotations

import heapq
import os
from array import array
from collections.abc import Iterable
from itertools import compress
from pathlib import Path
from types import ModuleType

kernel: ModuleType | None
try:
    import simsimd as kernel
except ImportError:  # the SQL scan in FactIndex takes over
    kernel = None

KERNEL_AVAILABLE = kernel is not None
# Share of the memory the process may use that the matrix may take by default.
MATRIX_SHARE = 0.4
# Where cgroup v2 and v1 say how much memory this container may use.
CGROUP_LIMITS = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


def memory_limit() -> int:
    """Bytes this process may use: its container's memory limit, or else the machine's memory."""
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in CGROUP_LIMITS:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            return min(int(text), physical)
    return physical


def memory_budget(max_mb: int | None) -> int:
    """Bytes the matrix may take: `max_mb` when given, else MATRIX_SHARE of `memory_limit()`."""
    if max_mb is not None:
        return max_mb * 1024 * 1024
    return int(MATRIX_SHARE * memory_limit())


class QuantizedMatrix:
    """Rows of `dims` signed bytes, one per fact; a removed row is refilled by the last one."""

    def __init__(self, dims: int) -> None:
        self.dims = dims
        self.codes = bytearray()
        self.ids = array("q")
        self.rows: dict[int, int] = {}

    @classmethod
    def from_rows(cls, dims: int, rows: Iterable[tuple[int, bytes]]) -> QuantizedMatrix:
        """A matrix of (fact id, code) rows, built in one pass; codes of another size are skipped."""
        matrix = cls(dims)
        codes: list[bytes] = []
        for fact_id, code in rows:
            if len(code) == dims and fact_id not in matrix.rows:
                matrix.rows[fact_id] = len(codes)
                matrix.ids.append(fact_id)
                codes.append(code)
        matrix.codes = bytearray(b"".join(codes))
        return matrix

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, fact_id: int) -> bool:
        return fact_id in self.rows

    def nbytes(self) -> int:
        return len(self.codes) + self.ids.itemsize * len(self.ids)

    def add(self, fact_id: int, code: bytes) -> None:
        if len(code) != self.dims:
            raise ValueError(f"int8 code of fact {fact_id} has {len(code)} bytes, expected {self.dims}")
        row = self.rows.get(fact_id)
        if row is not None:
            self.codes[row * self.dims : (row + 1) * self.dims] = code
            return
        self.rows[fact_id] = len(self.ids)
        self.ids.append(fact_id)
        self.codes += code

    def remove(self, fact_id: int) -> None:
        row = self.rows.pop(fact_id, None)
        if row is None:
            return
        last = len(self.ids) - 1
        if row != last:
            moved = self.ids[last]
            self.codes[row * self.dims : (row + 1) * self.dims] = self.codes[last * self.dims :]
            self.ids[row] = moved
            self.rows[moved] = row
        # Zeroed before the cut: a shrunk bytearray keeps its old bytes in spare capacity, and
        # a forgotten fact's code should not stay in memory.
        self.codes[last * self.dims :] = bytes(self.dims)
        del self.codes[last * self.dims :]
        self.ids.pop()

    def closest(self, query_code: bytes, count: int) -> list[int]:
        """The ids of the `count` rows of smallest int8 cosine distance to the query (more on ties)."""
        total = len(self.ids)
        if total == 0 or count <= 0:
            return []
        if count >= total:
            return self.ids.tolist()
        if kernel is None:
            raise RuntimeError("QuantizedMatrix.closest needs simsimd: check KERNEL_AVAILABLE first")
        matrix = memoryview(self.codes).cast("b", [total, self.dims])
        query = memoryview(bytearray(query_code)).cast("b", [1, self.dims])
        result = kernel.cdist(matrix, query, metric="cosine", dtype="int8", out_dtype="float32")
        distances = memoryview(result).cast("B").cast("f").tolist()
        # Selecting by a threshold keeps the work in C: nsmallest over plain floats, then one
        # comparison per row; sorting all rows or a key function per row costs several times more.
        threshold = heapq.nsmallest(count, distances)[-1]
        ids = self.ids
        return [ids[row] for row in compress(range(total), map(threshold.__ge__, distances))]

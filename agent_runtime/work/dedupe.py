"""What this agent has already processed, so a redelivered inbox item is not processed twice.

Delivery is at-least-once: an agent that dies after doing the work but before acknowledging it
gets the item again. The loop records each result here before acknowledging; on a redelivery
it finds the stored result and acknowledges again with it instead of redoing the work.

The log is an append-only JSON-lines file (`<data>/.runtime/processed.jsonl`): one line per
item, flushed and fsynced before the acknowledgement leaves. A torn last line (a crash in the
middle of a write) is ignored. The file is compacted to its newest entries when it grows past
a bound, through a temporary file and a rename.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from pydantic import BaseModel, ValidationError

from agent_runtime.protocol import WorkResult

PROCESSED_FILE = Path(".runtime") / "processed.jsonl"
DEFAULT_MAX_ENTRIES = 5000


class ProcessedEntry(BaseModel):
    item_id: str
    result: WorkResult


class ProcessedLog:
    def __init__(self, data_dir: Path, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.path = data_dir / PROCESSED_FILE
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._results: dict[str, WorkResult] = {}
        # After a torn write the file does not end with a newline; the next line starts a new one.
        self._torn = False
        self._load()

    def _load(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return
        self._torn = bool(text) and not text.endswith("\n")
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                entry = ProcessedEntry.model_validate_json(line)
            except ValidationError:
                continue
            self._results[entry.item_id] = entry.result

    def seen(self, item_id: str) -> WorkResult | None:
        """The result recorded for this item, or None when it was never processed here."""
        with self._lock:
            return self._results.get(item_id)

    def record(self, item_id: str, result: WorkResult) -> None:
        """Durably note that `item_id` was processed with `result` (call before acknowledging)."""
        line = ProcessedEntry(item_id=item_id, result=result).model_dump_json() + "\n"
        with self._lock:
            self._results.pop(item_id, None)
            self._results[item_id] = result
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write("\n" + line if self._torn else line)
                self._torn = False
                handle.flush()
                os.fsync(handle.fileno())
            if len(self._results) > self.max_entries:
                self._compact()

    def reload(self) -> None:
        """Read the file again (it was rewritten: a forgotten fact left the results)."""
        with self._lock:
            self._results = {}
            self._load()

    def __len__(self) -> int:
        with self._lock:
            return len(self._results)

    def _compact(self) -> None:
        """Keep the newest half of the bound: redeliveries concern recent items only."""
        keep = list(self._results.items())[-(self.max_entries // 2 or 1) :]
        self._results = dict(keep)
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            for item_id, result in keep:
                handle.write(ProcessedEntry(item_id=item_id, result=result).model_dump_json() + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(self.path)

"""Read views of the inbox and its retention, on real rows."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from inbox_parts import queue_parts

from agent_runtime.protocol import ItemKind, WorkResult, utcnow
from orchestrator.broker.items import ROW_OVERHEAD_BYTES, NewItem
from orchestrator.broker.queue import DurableQueue
from orchestrator.broker.upkeep import prune_finished
from orchestrator.broker.views import InboxCounts, item_ids_like, item_timing, queue_depths
from orchestrator.state.db import Database


def _put(queue: DurableQueue, agent: str, kind: ItemKind, sender: str, text: str = "") -> str:
    return queue.put(NewItem(agent=agent, kind=kind, sender=sender, text=text)).id


def test_counts_pending_and_waiting_since(tmp_path: Path) -> None:
    parts = queue_parts(tmp_path)
    _put(parts.queue, "beta", ItemKind.HEARTBEAT, "scheduler")
    _put(parts.queue, "beta", ItemKind.PEER_TELL, "alpha", "one")
    _put(parts.queue, "beta", ItemKind.PEER_TELL, "alpha", "two")
    first = parts.views.list("beta")[-1]
    assert parts.views.counts("beta") == InboxCounts(queued=2, queued_heartbeats=1, claimed=0)
    assert parts.views.counts("beta").busy  # a heartbeat still waits
    assert parts.views.pending_from("beta", "alpha") == 2
    assert parts.views.waiting_since() == {"beta": first.created_at.isoformat()}

    claimed = parts.queue.claim("beta")
    assert claimed is not None
    assert parts.views.latest_claimed("beta") == claimed
    assert parts.views.counts("beta").claimed == 1 and parts.views.pending("beta") == 3
    assert queue_depths(parts.db) == {("beta", "queued"): 2, ("beta", "claimed"): 1}


def test_failed_items_and_timings(tmp_path: Path) -> None:
    parts = queue_parts(tmp_path)
    item_id = _put(parts.queue, "beta", ItemKind.PEER_TELL, "alpha", "x")
    parts.queue.fail(item_id, "refused")
    [failed] = parts.views.failed_items("beta")
    assert failed.id == item_id and failed.error == "refused" and failed.sender == "alpha"
    timing = item_timing(parts.db, item_id)
    assert timing is not None and timing.state == "failed" and timing.finished_at is not None
    assert item_ids_like(parts.db, item_id[:6]) == [item_id]
    assert item_ids_like(parts.db, "%") == []  # a LIKE wildcard is taken literally


def test_queue_depths_of_a_database_without_the_table(tmp_path: Path) -> None:
    assert queue_depths(Database(tmp_path / "empty.db")) == {}


def test_retention_keeps_unfinished_items_and_counts_bytes(tmp_path: Path) -> None:
    parts = queue_parts(tmp_path)
    kept = _put(parts.queue, "beta", ItemKind.PEER_TELL, "alpha", "waiting")
    done = _put(parts.queue, "beta", ItemKind.PEER_TELL, "alpha", "answered")
    parts.queue.complete("beta", done, WorkResult(text="ok"))
    size = parts.views.stored_bytes()["beta"]
    assert size > 2 * ROW_OVERHEAD_BYTES
    assert prune_finished(parts.db, utcnow() - timedelta(hours=1), size_per_agent=10**6) == 0
    assert prune_finished(parts.db, utcnow() + timedelta(seconds=1), size_per_agent=10**6) == 1
    assert parts.views.get(done) is None and parts.views.get(kept) is not None

"""Dead letters: listed for the operator, queued again with a fresh count, or dropped for good."""

from __future__ import annotations

from pathlib import Path

from inbox_parts import QueueParts, queue_parts

from agent_runtime.protocol import ItemKind
from orchestrator.broker.dead_letters import DeadLetters
from orchestrator.broker.items import NewItem


def _poisoned(tmp_path: Path, text: str = "crashes beta") -> tuple[QueueParts, DeadLetters, str]:
    parts = queue_parts(tmp_path, "limits:\n  delivery_attempts: 1\n")
    item = parts.queue.put(
        NewItem(agent="beta", kind=ItemKind.OPERATOR_MESSAGE, sender="operator", text=text)
    )
    assert parts.queue.claim("beta") is not None
    parts.queue.requeue_claimed("beta")
    assert parts.queue.claim("beta") is None
    return parts, DeadLetters(parts.db, parts.queue, parts.views), item.id


def test_a_dead_letter_is_listed_with_a_preview(tmp_path: Path) -> None:
    _, dead, item_id = _poisoned(tmp_path, "x" * 300)
    [letter] = dead.list()
    assert letter.id == item_id and letter.agent == "beta" and letter.attempts == 1
    assert letter.preview == "x" * 200 and letter.dead_at is not None
    assert dead.list("alpha") == [] and dead.count("beta") == 1


def test_retry_queues_it_again_with_a_fresh_count_and_announces_it(tmp_path: Path) -> None:
    parts, dead, item_id = _poisoned(tmp_path)
    announced = len(parts.arrived)
    assert dead.retry("alpha", item_id) is False  # not alpha's
    assert dead.retry("beta", item_id) is True
    assert [item.id for _, item in parts.arrived[announced:]] == [item_id]
    again = parts.queue.claim("beta")
    assert again is not None and again.id == item_id and again.attempt == 1
    assert dead.retry("beta", item_id) is False  # no longer dead


def test_drop_keeps_it_in_the_log_and_masks_the_operators_text(tmp_path: Path) -> None:
    parts, dead, item_id = _poisoned(tmp_path, "the key is s3cret")
    parts.queue.mask = lambda text: text.replace("s3cret", "[masked]")
    assert dead.drop("beta", item_id) is True
    assert parts.views.state(item_id) == "dropped"
    item = parts.views.get(item_id)
    assert item is not None and item.text == "the key is [masked]"
    assert dead.count("beta") == 0 and dead.drop("beta", item_id) is False

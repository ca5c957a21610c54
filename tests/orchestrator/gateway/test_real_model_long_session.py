"""A long session on the real model's small window (8K tokens): the context manager flushes and
compacts before the prompt outgrows the window, and the agent keeps answering. The agent has
the server to itself, so that the server's prompt cache serves it as it would in production."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from realmodel_harness import MODEL_WINDOW, running_fleet, send, state, turns

pytestmark = pytest.mark.realmodel

AGENTS = """\
  reader:
    role: reads long notes and answers in one short sentence
"""
LONG_NOTE_WORDS = 900
MAX_LONG_NOTES = 9


@pytest.fixture(scope="module")
def fleet(llama_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with running_fleet(tmp_path_factory.mktemp("realmodel-long"), llama_server, AGENTS) as folder:
        yield folder


NOTE_TEXT = (
    "The harbour office logs every ship that enters or leaves, with its cargo, its crew and the "
    "weather at the time, so that a later reader can tell what happened on any given day. "
)


def _long_note(number: int) -> str:
    body = NOTE_TEXT * (LONG_NOTE_WORDS // len(NOTE_TEXT.split()))
    return f"Note {number}. Keep it in mind and answer only 'noted'. {body}"


def test_a_long_session_compacts_within_the_models_window_and_keeps_working(fleet: Path) -> None:
    compacted = False
    for number in range(1, MAX_LONG_NOTES + 1):
        send(fleet, "reader", _long_note(number))
        if state(fleet, "SELECT 1 FROM events WHERE type = 'compaction.done' AND agent = 'reader'"):
            compacted = True
            break
    assert compacted, f"no compaction after {MAX_LONG_NOTES} long notes"
    send(fleet, "reader", "Say done.")
    assert turns(fleet, "reader")[0]["outcome"] in {"ok", "limit"}
    # Every request fitted the model's real window: the server refused none of them.
    failed = state(fleet, "SELECT error FROM gateway_usage WHERE agent = 'reader' AND status != 'ok'")
    assert failed == []
    [(largest,)] = state(fleet, "SELECT MAX(tokens_in) FROM gateway_usage WHERE agent = 'reader'")
    assert largest < MODEL_WINDOW

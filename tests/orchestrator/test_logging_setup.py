"""configure_logging: human lines or one JSON object per line, with extra fields kept."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from orchestrator.logging_setup import configure_logging


@pytest.fixture(autouse=True)
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_json_lines_carry_level_logger_message_and_extras() -> None:
    stream = io.StringIO()
    configure_logging(json=True, level="debug", stream=stream)
    logging.getLogger("flotilla.test").info(
        "agent %s restarted", "alpha", extra={"agent": "alpha", "attempt": 2}
    )
    record = json.loads(stream.getvalue().strip())
    assert record["level"] == "info"
    assert record["logger"] == "flotilla.test"
    assert record["message"] == "agent alpha restarted"
    assert record["agent"] == "alpha" and record["attempt"] == 2
    assert record["time"].endswith("+00:00")


def test_json_lines_include_exceptions() -> None:
    stream = io.StringIO()
    configure_logging(json=True, stream=stream)
    try:
        raise ValueError("broken fleet.yaml")
    except ValueError:
        logging.getLogger("flotilla.test").exception("apply failed")
    record = json.loads(stream.getvalue().strip())
    assert record["level"] == "error"
    assert "ValueError: broken fleet.yaml" in record["exception"]


def test_human_format_and_level_filtering() -> None:
    stream = io.StringIO()
    configure_logging(json=False, level="warning", stream=stream)
    logging.getLogger("flotilla.test").info("hidden")
    logging.getLogger("flotilla.test").warning("shown")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    assert "WARNING" in lines[0] and "flotilla.test: shown" in lines[0]


def test_uvicorn_logs_reach_the_same_handler() -> None:
    stream = io.StringIO()
    configure_logging(json=True, stream=stream)
    logging.getLogger("uvicorn.error").warning("port busy")
    assert json.loads(stream.getvalue())["logger"] == "uvicorn.error"


def test_unknown_level_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown log level 'loud'"):
        configure_logging(level="loud")

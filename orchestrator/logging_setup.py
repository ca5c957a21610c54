"""Logging for the orchestrator process: human-readable lines, or one JSON object per line.

JSON lines suit log shippers (Loki, Elasticsearch, journald with a parser): every record keeps
its level, logger name and time, plus any structured fields passed with `extra=`.

Every message is redacted (no secret value, in any of its encodings) and then cut to
`MAX_MESSAGE_CHARS`, so that nothing an agent sends can make one line long. A log file rotates
by size: at most `LOG_FILE_BYTES` per file and `LOG_BACKUPS` older files, so the log of a
running orchestrator never holds more than `LOG_TOTAL_BYTES` (plus one line).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any, TextIO

from orchestrator.state.redaction import NO_REDACTION, Redaction

HUMAN_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
MAX_MESSAGE_CHARS = 2000
LOG_FILE_BYTES = 10 * 1024 * 1024
LOG_BACKUPS = 4
LOG_TOTAL_BYTES = LOG_FILE_BYTES * (LOG_BACKUPS + 1)

# Where log messages get the secret values to take out: read at each record (an apply may
# declare new secrets); set once the fleet's secrets are known.
_redaction_source: list[Callable[[], Redaction]] = [lambda: NO_REDACTION]


def set_log_redaction(redaction: Callable[[], Redaction]) -> None:
    _redaction_source[0] = redaction


class BoundedMessages(logging.Filter):
    """Each record's message redacted, then cut to MAX_MESSAGE_CHARS."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        record.msg = _redaction_source[0]().cut(message, MAX_MESSAGE_CHARS)
        if len(message) > MAX_MESSAGE_CHARS:
            record.msg += f" [line cut at {MAX_MESSAGE_CHARS} characters]"
        record.args = None
        return True


# Attributes every LogRecord carries; anything else on a record came from `extra=`.
_STANDARD_ATTRS = frozenset(
    vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None)).keys() | {"message", "asctime"}
)


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, extra fields, exception text."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                doc[key] = value
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            doc["stack"] = self.formatStack(record.stack_info)
        return json.dumps(doc, default=str, ensure_ascii=False)


def _level_number(level: int | str) -> int:
    if isinstance(level, int):
        return level
    number = logging.getLevelName(level.upper())
    if not isinstance(number, int):
        raise ValueError(f"unknown log level {level!r}: use debug, info, warning, error or critical")
    return number


def configure_logging(
    json: bool = False,
    level: int | str = "info",
    stream: TextIO | None = None,
    file: Path | None = None,
    file_bytes: int = LOG_FILE_BYTES,
) -> None:
    """Install one handler on the root logger (replacing earlier ones) and route uvicorn's logs to it:
    to `file` (rotated by size) when given, else to `stream` (stderr by default).

    uvicorn reconfigures logging when it starts unless it is given `log_config=None`.
    """
    number = _level_number(level)
    handler: logging.Handler
    if file is not None:
        handler = RotatingFileHandler(file, maxBytes=file_bytes, backupCount=LOG_BACKUPS, encoding="utf-8")
    else:
        handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if json else logging.Formatter(HUMAN_FORMAT))
    handler.addFilter(BoundedMessages())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(number)
    # httpx logs every request's full URL at INFO; a URL the orchestrator sends for an agent may
    # hold a secret filled in from its handle, which must never reach a log.
    logging.getLogger("httpx").setLevel(max(number, logging.WARNING))
    # uvicorn installs its own handlers; let its records reach ours so the format is uniform.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True

"""Keeping the message log in step with the inbox after an orchestrator was killed.

An ask is closed by the coroutine that waits for its answer. When the orchestrator is killed
while waiting, the item can still be answered (after the restart, the agent acknowledges it),
but nobody is left to close the ask. The log is repaired at start and then once a minute.
"""

from __future__ import annotations

import asyncio
import logging

from orchestrator.broker.messages import MessageLog

log = logging.getLogger(__name__)

REPAIR_EVERY_S = 60.0


def repair_messages(messages: MessageLog) -> int:
    repaired = messages.repair_finished()
    if repaired:
        log.info("closed %d ask(s) whose item ended while nobody waited for it", repaired)
    return repaired


async def keep_messages_in_step(messages: MessageLog, every_s: float = REPAIR_EVERY_S) -> None:
    while True:
        await asyncio.to_thread(repair_messages, messages)
        await asyncio.sleep(every_s)

"""Replies to one Telegram chat leave in the order its messages came, whatever each send costs."""

from __future__ import annotations

import asyncio

from orchestrator.conversations.telegram import ReplyOrder


def test_a_slow_first_reply_is_not_overtaken_and_other_chats_do_not_wait() -> None:
    sent: list[str] = []

    async def reply(order: ReplyOrder, chat: int, text: str, cost_s: float) -> None:
        async with order.turn(chat):
            await asyncio.sleep(cost_s)
            sent.append(text)

    async def scenario() -> ReplyOrder:
        order = ReplyOrder()
        await asyncio.gather(
            reply(order, 1, "first", 0.05),
            reply(order, 1, "second", 0.0),
            reply(order, 2, "other chat", 0.0),
        )
        return order

    order = asyncio.run(scenario())
    assert sent == ["other chat", "first", "second"]
    assert len(order) == 0  # nothing kept for a chat between replies

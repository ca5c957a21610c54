"""Conversations with people through chat tools (fleet.yaml `channels:` of type `telegram_chat`
and `slack_chat`): pairing a person with a one-time code the operator issues, the allow-list of
paired people, routing each message to an agent (`@agent`, or the person's current agent), and the
reply back into the same chat or thread, cut to the platform's limits. Owns the tables
`chat_pairing_codes` and `chat_people`.

A paired person is a principal (`person:CHANNEL:USER`) with fewer rights than the operator: they
reach only the agents their channel lists, and their texts are capped and cleaned like the
operator's. Must not import the HTTP layer (`orchestrator.api`).
"""

from orchestrator.conversations.people import PairingCode, PeopleStore, Person

__all__ = ["PairingCode", "PeopleStore", "Person"]

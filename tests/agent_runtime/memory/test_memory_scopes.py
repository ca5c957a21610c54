"""Per-person memory scopes at the store and tools level: what Ana states is saved in Ana's scope
with her word as provenance, recalled in her conversations with the shared facts, and never
found, merged, superseded or forgotten from Bruno's; MEMORY.md and the salient facts hold shared
facts only; the admission rule decides who writes the shared scope."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_runtime.memory.bm25 import WorkspaceIndex
from agent_runtime.memory.factlog import FactLog
from agent_runtime.memory.models import FactSource
from agent_runtime.memory.salience import salient_block
from agent_runtime.memory.store import MemoryStore
from agent_runtime.memory.tools import MemoryTools
from agent_runtime.protocol import InboxItem, ItemKind, item_source
from agent_runtime.work.memory_bridge import MemoryBridge
from agent_runtime.work.worker import trigger_of

ANA = "person:team:111"
BRUNO = "person:team:222"


@pytest.fixture
def tools(store: MemoryStore, data_dir: Path) -> MemoryTools:
    return MemoryTools(
        store,
        WorkspaceIndex(data_dir / "workspace", refresh_interval_s=0),
        fact_log=FactLog(data_dir / "workspace"),
    )


def _texts(result: dict[str, object]) -> list[str]:
    found = result["results"]
    assert isinstance(found, list)
    return [str(hit["text"]) for hit in found]


def test_a_persons_fact_is_theirs_alone(tools: MemoryTools, data_dir: Path) -> None:
    tools.converse_with("operator", shares=True)
    tools.call("memory_save", {"text": "The team standup is at 9:30 every weekday"})

    tools.converse_with(ANA, shares=False)
    tools.people.heard("my locker code is 4512", ANA)
    saved = tools.call("memory_save", {"text": "The user's locker code is 4512", "source": "user_stated"})
    assert saved["provenance"] == "user_stated"
    fact = tools.store.get(int(saved["id"]))
    assert fact is not None and fact.scope == ANA and fact.source is FactSource.USER_STATED
    assert "4512" in " ".join(_texts(tools.call("memory_search", {"query": "locker code"})))
    assert "standup" in " ".join(_texts(tools.call("memory_search", {"query": "standup weekday"})))

    tools.converse_with(BRUNO, shares=False)
    assert not any(
        "4512" in text for text in _texts(tools.call("memory_search", {"query": "locker code 4512"}))
    )
    # Ana's words do not make Bruno's claim a person's word, nor reach her fact.
    claimed = tools.call("memory_save", {"text": "The user's locker code is 4512", "source": "user_stated"})
    assert claimed["provenance"] == "agent"
    assert claimed["id"] != saved["id"]
    refused = tools.call("memory_forget", {"id": saved["id"]})
    assert refused["status"] == "refused"
    assert tools.store.get(int(saved["id"])) is not None

    memory_md = (
        (data_dir / "workspace" / "MEMORY.md").read_text()
        if (data_dir / "workspace" / "MEMORY.md").exists()
        else ""
    )
    assert "4512" not in memory_md
    assert "4512" not in salient_block(tools.store, 500)
    assert [f.scope for f in tools.store.list_facts(scope=ANA)] == [ANA]


def test_a_subject_in_one_scope_does_not_replace_another_scopes(tools: MemoryTools) -> None:
    shared = tools.store.save("The user's city is Lyon", subject="user.city", source="operator")
    ana = tools.store.save("The user's city is Porto", subject="user.city", source="user_stated", scope=ANA)
    assert ana.outcome.value == "saved"
    assert tools.store.get(shared.fact_id or 0) is not None
    assert {f.scope for f in tools.store.list_facts()} == {"", ANA}
    hits = tools.store.search("city", 10, scopes=[""])
    assert [hit.fact.text for hit in hits] == ["The user's city is Lyon"]


def test_the_admission_rule_lets_a_sender_write_the_shared_scope(tools: MemoryTools) -> None:
    tools.converse_with(ANA, shares=True)
    saved = tools.call("memory_save", {"text": "The office closes at 18:00 on Fridays"})
    fact = tools.store.get(int(saved["id"]))
    assert fact is not None and fact.scope == ""
    tools.converse_with("hook:github", shares=False)
    hooked = tools.call("memory_save", {"text": "Pull request 12 was merged into main"})
    fact = tools.store.get(int(hooked["id"]))
    assert fact is not None and fact.scope == "hook:github"


@pytest.mark.parametrize(
    ("principal", "source"),
    [
        ("operator", "operator"),
        ("person:team:111", "person"),
        ("hook:github", "hook"),
        ("agent:writer", "peer"),
        ("scheduler", "heartbeat"),
    ],
)
def test_each_principal_is_a_kind_of_sender(principal: str, source: str) -> None:
    assert item_source(principal) == source


def test_the_runtime_points_the_tools_at_each_items_sender(tools: MemoryTools) -> None:
    bridge = MemoryBridge(memory_tools=tools, people=tools.people, shared_writers=("operator", "heartbeat"))
    now = datetime.now(UTC)
    bridge.heard(
        InboxItem(
            id="1",
            kind=ItemKind.OPERATOR_MESSAGE,
            created_at=now,
            sender=ANA,
            principal=ANA,
            text="my pin is 77",
        )
    )
    assert (tools.write_scope, tools.read_scopes, tools.people.messages()) == (
        ANA,
        ("", ANA),
        ["my pin is 77"],
    )
    bridge.heard(InboxItem(id="2", kind=ItemKind.HEARTBEAT, created_at=now, sender="scheduler"))
    assert (tools.write_scope, tools.read_scopes, tools.people.messages()) == ("", ("",), [])
    bridge.heard(
        InboxItem(id="3", kind=ItemKind.OPERATOR_MESSAGE, created_at=now, sender="operator", text="hi")
    )
    assert (tools.write_scope, tools.people.messages()) == ("", ["hi"])


def test_a_persons_message_starts_a_run_of_its_own_trigger() -> None:
    now = datetime.now(UTC)
    person = InboxItem(id="1", kind=ItemKind.OPERATOR_MESSAGE, created_at=now, sender=ANA, principal=ANA)
    operator = InboxItem(id="2", kind=ItemKind.OPERATOR_MESSAGE, created_at=now, sender="operator")
    assert (trigger_of(person), trigger_of(operator)) == ("person", "operator")

"""The tools the model calls: schemas, save with the daily log, search across sources, forget."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
from conftest import ManualClock

from agent_runtime.memory.bm25 import WorkspaceIndex
from agent_runtime.memory.factlog import FactLog
from agent_runtime.memory.store import MemoryStore
from agent_runtime.memory.tools import MemoryTools, ToolInputError


@pytest.fixture
def tools(store: MemoryStore, data_dir: Path) -> MemoryTools:
    index = WorkspaceIndex(data_dir / "workspace", refresh_interval_s=0)
    return MemoryTools(store, index)


def test_tool_specs_are_valid_openai_function_schemas() -> None:
    specs = MemoryTools.tool_specs()
    assert [spec["function"]["name"] for spec in specs] == ["memory_save", "memory_search", "memory_forget"]
    for spec in specs:
        assert spec["type"] == "function"
        jsonschema.Draft202012Validator.check_schema(spec["function"]["parameters"])


def test_save_appends_to_the_daily_log(tools: MemoryTools, data_dir: Path, clock: ManualClock) -> None:
    tools.people.heard("My dentist is Dr. Okafor, by the way.")
    result = tools.call(
        "memory_save",
        {"text": "The user's dentist is Dr. Okafor", "category": "health", "source": "user_stated"},
    )
    assert result["status"] == "saved"
    log = (data_dir / "workspace" / "memory" / "2025-05-01.md").read_text()
    assert log.startswith("# 2025-05-01\n")
    assert (
        f"- 09:00:00 · memory · [fact {result['id']}] The user's dentist is Dr. Okafor (user_stated, health)\n"
        in log
    )
    merged = tools.call("memory_save", json.dumps({"text": "the user's dentist is Dr. Okafor."}))
    assert merged["status"] == "merged"
    assert log == (data_dir / "workspace" / "memory" / "2025-05-01.md").read_text()  # repeats are not logged


def test_search_returns_facts_episodes_and_files_saying_where_from(
    tools: MemoryTools, data_dir: Path
) -> None:
    tools.memory_save("The quarterly budget for marketing is 40k", category="work")
    tools.store.add_episode(
        "2025-04-30T10:00:00Z", "2025-04-30T11:00:00Z", ["t5", "t6"], "Discussed the quarterly budget split"
    )
    (data_dir / "workspace" / "notes.md").write_text("# Notes\n\nThe quarterly budget review is with Ana.\n")
    found = tools.call("memory_search", {"query": "quarterly budget", "k": 5})
    assert found["mode"] == "hybrid"
    by_origin = {result["from"]: result for result in found["results"]}
    assert set(by_origin) == {"fact", "episode", "file"}
    assert by_origin["fact"]["ref"].startswith("fact:")
    assert by_origin["fact"]["provenance"] == "agent"
    assert by_origin["episode"]["ref"] == "episode:1"
    assert by_origin["episode"]["period"] == "2025-04-30T10:00:00Z .. 2025-04-30T11:00:00Z"
    assert by_origin["file"]["ref"] == "workspace/notes.md:1-3"
    # The fact's own daily-log line is not returned a second time as a file.
    assert not any("memory/" in result["ref"] for result in found["results"])


def test_forget_by_id_redacts_the_daily_log(tools: MemoryTools, data_dir: Path) -> None:
    saved = tools.memory_save("The user's alarm code is 7731", source="user_stated")
    tools.people.heard("Please forget my alarm code.")
    result = tools.call("memory_forget", {"id": saved["id"]})
    assert result["status"] == "forgotten" and result["ids"] == [saved["id"]]
    log = (data_dir / "workspace" / "memory" / "2025-05-01.md").read_text()
    assert "7731" not in log
    assert f"[fact {saved['id']}] (forgotten)" in log
    assert tools.memory_search("alarm code")["results"] == []


def test_forget_by_query_needs_a_clear_match(tools: MemoryTools) -> None:
    tools.memory_save("The user's bank is Northwind", category="finance")
    tools.memory_save("The user's insurer is Contoso", category="finance")
    vague = tools.call("memory_forget", {"query": "finance stuff"})
    assert vague["status"] == "ambiguous" and vague["ids"] == []
    clear = tools.call("memory_forget", {"query": "the user's bank is Northwind"})
    assert clear["status"] == "forgotten" and clear["ids"] == [1]
    assert "Northwind" not in json.dumps(clear)  # the answer never repeats what it forgot
    assert [r["text"] for r in tools.memory_search("bank insurer")["results"]] == [
        "The user's insurer is Contoso"
    ]


def test_forgotten_facts_are_kept_out_of_file_results(tools: MemoryTools, data_dir: Path) -> None:
    (data_dir / "workspace" / "MEMORY.md").write_text(
        "# Memory\n\n- The user's alarm code is 7731\n- The user's cat is Miso\n"
    )
    saved = tools.memory_save("The user's alarm code is 7731", source="user_stated")
    tools.memory_forget(saved["id"])
    texts = [r["text"] for r in tools.memory_search("alarm code cat")["results"] if r["from"] == "file"]
    assert texts and all("7731" not in text for text in texts)
    assert any("Miso" in text for text in texts)


def test_contradicting_and_blocked_saves_are_explained(tools: MemoryTools) -> None:
    tools.memory_save("The user's shoe size is 42", source="user_stated", subject="user.shoe_size")
    disputed = tools.call(
        "memory_save",
        {"text": "The user's shoe size is 44", "source": "inferred", "subject": "user.shoe_size"},
    )
    assert disputed["status"] == "contradiction"
    assert "contradiction 1" in disputed["message"]


def test_bad_arguments_name_the_problem(tools: MemoryTools) -> None:
    with pytest.raises(ToolInputError, match="text"):
        tools.call("memory_save", {"category": "x"})
    with pytest.raises(ToolInputError, match="source"):
        tools.call("memory_save", {"text": "x", "source": "operator"})
    with pytest.raises(ToolInputError, match="k"):
        tools.call("memory_search", {"query": "x", "k": 0})
    with pytest.raises(ToolInputError, match="not valid JSON"):
        tools.call("memory_search", "{oops")
    with pytest.raises(ToolInputError, match="id, or a query"):
        tools.call("memory_forget", {})
    with pytest.raises(ToolInputError, match="unknown memory tool"):
        tools.call("memory_delete", {})


def test_handlers_return_json_text(tools: MemoryTools) -> None:
    handlers = tools.handlers()
    out = json.loads(handlers["memory_save"]({"text": "Standup is at 9:30"}))
    assert out["status"] == "saved"
    assert (
        json.loads(handlers["memory_search"]({"query": "standup"}))["results"][0]["text"]
        == "Standup is at 9:30"
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give files away")
def test_log_files_written_by_root_stay_the_agents(
    store: MemoryStore, data_dir: Path, clock: ManualClock
) -> None:
    folder = data_dir / "workspace" / "memory"
    os.chown(folder, 10001, 10001)
    log = FactLog(data_dir / "workspace", clock=clock.now)
    fact = store.get(store.save("The user's locker is B12", source="operator").fact_id)  # type: ignore[arg-type]
    assert fact is not None
    path = log.append(fact)
    assert (path.stat().st_uid, path.stat().st_gid) == (10001, 10001)
    log.redact([fact.id])
    assert (path.stat().st_uid, path.stat().st_gid) == (10001, 10001)
    assert "(forgotten)" in path.read_text()

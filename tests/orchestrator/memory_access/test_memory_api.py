"""The operator's memory routes and `flotilla memory ...`, against an agent's real memory.db.

The memory database is in the agent's own storage, which the orchestrator never opens: every
route is asked of the agent over its link. Each test serves a real orchestrator with uvicorn
on loopback and connects the agent's real channel (`agent_runtime.transport.channel`) answering with
`agent_runtime.transport.serving`, on a storage folder of its own.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import httpx  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from agent_runtime.memory.embeddings import DeterministicEmbedder, GatewayEmbedder  # noqa: E402
from agent_runtime.memory.factlog import FactLog  # noqa: E402
from agent_runtime.memory.models import FactSource, MemoryConfig, SaveOutcome  # noqa: E402
from agent_runtime.memory.store import MemoryStore  # noqa: E402
from agent_runtime.testing.embeddings import deterministic_embedding  # noqa: E402
from orchestrator.api.app import create_app  # noqa: E402
from orchestrator.cli.memory import memory  # noqa: E402
from orchestrator.config.loader import load_fleet  # noqa: E402
from orchestrator.services import Services  # noqa: E402
from orchestrator.state.endpoint import Endpoint, write_endpoint  # noqa: E402
from orchestrator.testing.agent_link import connect_agent  # noqa: E402
from orchestrator.testing.fake_backend import FakeBackend  # noqa: E402
from orchestrator.testing.server import serve_app  # noqa: E402
from orchestrator.wiring import attach_subsystems, core_services, fleet_manager  # noqa: E402

DIMS = 64
FLEET = """\
version: 1
fleet: memtest
llm:
  embedding:
    model: {model}
    dimensions: 64
agents:
  alpha:
    role: researcher
  beta:
    role: writer
"""


def build(tmp_path: Path, model: str = "test") -> Services:
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(textwrap.dedent(FLEET.format(model=model)))
    core = core_services(load_fleet(fleet_file), FakeBackend())
    core.operator_token = core.tokens.mint_operator()
    return attach_subsystems(core, fleet_manager(core))


def agent_store(services: Services, agent: str = "alpha", embedder: object = "test") -> MemoryStore:
    """The store as the agent opens it in its own storage (same file, same model)."""
    storage = services.paths.agent_storage(agent)
    return MemoryStore(
        storage / "memory.db",
        embedder=DeterministicEmbedder(DIMS) if embedder == "test" else None,
        config=MemoryConfig(dimensions=DIMS, embedding_model="test"),
        fact_log=FactLog(storage / "workspace"),
    )


@contextmanager
def live(services: Services, *agents: str) -> Iterator[str]:
    """A real orchestrator on loopback, with these agents connected; yields its URL."""
    with serve_app(create_app(services)) as url, ExitStack() as stack:
        for agent in agents:
            stack.enter_context(connect_agent(services, url, agent))
        yield url


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    built = build(tmp_path)
    yield built
    built.db.close()


@pytest.fixture
def seeded(services: Services) -> Iterator[MemoryStore]:
    store = agent_store(services)
    store.save(
        "The user's locker code is 4512", category="personal", source="user_stated", subject="user.locker"
    )
    store.save(
        "The user's locker code is 9981", category="personal", source="inferred", subject="user.locker"
    )
    store.save("The user prefers window seats", category="travel", source="agent")
    store.add_episode(
        "2025-05-01T09:00:00Z", "2025-05-01T10:00:00Z", ["t1"], "Booked the Lisbon trip with window seats"
    )
    yield store
    store.close()


@pytest.fixture
def operator(services: Services) -> Iterator[httpx.Client]:
    with live(services, "alpha") as url, operator_client(services, url) as client:
        yield client


def operator_client(services: Services, url: str) -> httpx.Client:
    return httpx.Client(
        base_url=url, headers={"authorization": f"Bearer {services.operator_token}"}, timeout=60
    )


def base(agent: str = "alpha") -> str:
    return f"/api/v1/agents/{agent}/memory"


def test_only_the_operator_may_use_the_memory_routes(services: Services, seeded: MemoryStore) -> None:
    with live(services, "alpha") as url:
        assert httpx.get(f"{url}{base()}/facts").status_code == 401
        agent_token = services.tokens.mint("beta")
        with httpx.Client(base_url=url, headers={"authorization": f"Bearer {agent_token}"}) as agent:
            assert agent.get(f"{base()}/facts").status_code == 403
            assert agent.delete(f"{base()}/facts/1").status_code == 403


def test_listing_and_reading_facts(operator: httpx.Client, seeded: MemoryStore) -> None:
    facts = operator.get(f"{base()}/facts").json()["facts"]
    assert [f["text"] for f in facts] == ["The user prefers window seats", "The user's locker code is 4512"]
    assert (
        operator.get(f"{base()}/facts", params={"category": "travel"}).json()["facts"][0]["source"] == "agent"
    )
    detail = operator.get(f"{base()}/facts/1").json()
    assert detail["fact"]["subject"] == "user.locker"
    assert [v["id"] for v in detail["history"]] == [1]
    assert operator.get(f"{base()}/facts/99").status_code == 404
    assert operator.get(f"{base()}/facts", params={"status": "bogus"}).status_code == 422


def test_a_fresh_agent_creates_its_memory_when_asked_and_an_unknown_agent(services: Services) -> None:
    with live(services, "beta") as url, operator_client(services, url) as operator:
        assert operator.get(f"{base('beta')}/facts").json() == {"facts": []}
        added = operator.post(f"{base('beta')}/facts", json={"text": "The operator's name is Ana"})
        assert added.status_code == 200 and added.json()["outcome"] == "saved"
        assert operator.get(f"{base('beta')}/status").json()["facts_active"] == 1
        assert (services.paths.agent_storage("beta") / "memory.db").is_file()
        assert not (services.paths.agent_dir("beta") / "memory.db").exists()
        unknown = operator.get(f"{base('gamma')}/facts")
        assert unknown.status_code == 404 and unknown.json()["error"] == "unknown_agent"
        # alpha has no channel open and shows no sign of life: a clear 503, quickly.
        absent = operator.get(f"{base('alpha')}/facts")
        assert absent.status_code == 503 and "alpha cannot answer" in absent.json()["message"]


def test_search_ranks_like_the_agent_without_counting_accesses(
    operator: httpx.Client, seeded: MemoryStore
) -> None:
    found = operator.get(f"{base()}/search", params={"q": "window seat", "k": 3}).json()
    assert found["mode"] == "hybrid"
    assert found["facts"][0]["fact"]["text"] == "The user prefers window seats"
    assert found["episodes"][0]["episode"]["summary"] == "Booked the Lisbon trip with window seats"
    assert seeded.get(found["facts"][0]["fact"]["id"]).access_count == 0  # type: ignore[union-attr]
    assert operator.get(f"{base()}/search").status_code == 422


def test_the_history_route_returns_superseded_versions_with_their_validity(
    operator: httpx.Client, seeded: MemoryStore
) -> None:
    seeded.save("The user prefers aisle seats", category="travel", source="user_stated")
    found = operator.get(f"{base()}/history", params={"q": "prefers seats", "k": 3}).json()
    assert [(v["fact"]["text"], v["current"]) for v in found["versions"]] == [
        ("The user prefers aisle seats", True),
        ("The user prefers window seats", False),
    ]
    old = found["versions"][1]
    assert old["valid_until"] == found["versions"][0]["valid_from"]
    assert old["replaced_by"] == found["versions"][0]["fact"]["id"]
    before = operator.get(
        f"{base()}/history", params={"q": "prefers seats", "as_of": old["valid_from"]}
    ).json()
    assert [v["fact"]["text"] for v in before["versions"]] == ["The user prefers window seats"]
    assert operator.get(f"{base()}/history", params={"q": "seats", "as_of": "soon"}).status_code == 422
    current = operator.get(f"{base()}/search", params={"q": "prefers seats", "k": 3}).json()
    assert [hit["fact"]["text"] for hit in current["facts"]] == ["The user prefers aisle seats"]


def test_add_and_edit_as_the_operator(
    operator: httpx.Client, seeded: MemoryStore, services: Services
) -> None:
    added = operator.post(
        f"{base()}/facts", json={"text": "The user's manager is Ines", "category": "people"}
    ).json()
    assert added["outcome"] == "saved"
    edited = operator.put(
        f"{base()}/facts/{added['fact_id']}", json={"text": "The user's manager is Ines Duarte"}
    ).json()
    assert edited["outcome"] == "superseded" and edited["replaced_id"] == added["fact_id"]
    new = seeded.get(edited["fact_id"])
    assert new is not None and new.source is FactSource.OPERATOR and new.category == "people"
    history = operator.get(f"{base()}/facts/{edited['fact_id']}").json()["history"]
    assert [v["status"] for v in history] == ["superseded", "active"]
    logs = "".join(
        p.read_text() for p in (services.paths.agent_storage("alpha") / "workspace" / "memory").glob("*.md")
    )
    assert f"[fact {edited['fact_id']}] The user's manager is Ines Duarte (operator, people)" in logs
    bad = operator.put(f"{base()}/facts/{added['fact_id']}", json={"text": "again"})
    assert bad.status_code == 404  # only active facts can be edited
    assert operator.post(f"{base()}/facts", json={"text": "   "}).status_code == 422
    assert operator.post(f"{base()}/facts", json={"text": "x", "source": "user_stated"}).status_code == 422


def test_forget_through_the_api_bars_the_agent_from_relearning(
    operator: httpx.Client, seeded: MemoryStore, services: Services
) -> None:
    gone = operator.delete(f"{base()}/facts/1").json()
    assert gone == {"forgotten": [1], "restatements": []}
    assert operator.get(f"{base()}/search", params={"q": "locker code"}).json()["facts"] == []
    relearned = seeded.save("The user's locker code is 4512", source="extracted")
    assert relearned.outcome is SaveOutcome.BLOCKED
    assert operator.get(f"{base()}/contradictions").json() == {
        "contradictions": []
    }  # dismissed with the fact


def test_contradictions_can_be_listed_and_resolved(operator: httpx.Client, seeded: MemoryStore) -> None:
    pending = operator.get(f"{base()}/contradictions").json()["contradictions"]
    assert len(pending) == 1
    item = pending[0]
    assert (item["fact_text"], item["text"], item["source"]) == (
        "The user's locker code is 4512",
        "The user's locker code is 9981",
        "inferred",
    )
    assert (
        operator.post(f"{base()}/contradictions/{item['id']}/resolve", json={"keep": "both"}).status_code
        == 422
    )
    done = operator.post(f"{base()}/contradictions/{item['id']}/resolve", json={"keep": "new"}).json()
    assert done["resolution"] == "kept_new"
    assert [
        h["fact"]["text"] for h in operator.get(f"{base()}/search", params={"q": "locker"}).json()["facts"]
    ] == ["The user's locker code is 9981"]
    assert (
        operator.post(f"{base()}/contradictions/{item['id']}/resolve", json={"keep": "old"}).status_code
        == 404
    )
    assert (
        len(operator.get(f"{base()}/contradictions", params={"status": "all"}).json()["contradictions"]) == 1
    )


def test_without_an_embedding_model_the_operator_searches_by_keyword(tmp_path: Path) -> None:
    services = build(tmp_path, model="null")
    store = agent_store(services)
    store.save("The user's bike is a blue Brompton", category="things")
    store.close()
    with live(services, "alpha") as url, operator_client(services, url) as client:
        found = client.get(f"{base()}/search", params={"q": "Brompton"}).json()
        assert found["mode"] == "keyword"
        assert found["facts"][0]["fact"]["text"] == "The user's bike is a blue Brompton"
        status = client.get(f"{base()}/status").json()
        assert status["missing_vectors"] == 0  # the agent's vectors were kept
    services.db.close()


def test_cli_and_gateway_embeddings_against_a_live_orchestrator(
    services: Services, seeded: MemoryStore
) -> None:
    with live(services, "alpha") as url:
        agent_token = services.tokens.mint("beta")
        # The agent's embedder gets the test model's vectors through the real gateway route.
        embedder = GatewayEmbedder(url, agent_token, "test", DIMS)
        vector = embedder(["locker code"])[0]
        assert vector == pytest.approx(deterministic_embedding("locker code", DIMS), abs=1e-6)
        embedder.close()

        write_endpoint(services.paths, Endpoint(url=url, token=services.operator_token, pid=os.getpid()))
        fleet = ["-f", str(services.fleet.path)]
        cli = CliRunner()

        listed = cli.invoke(memory, ["list", *fleet, "alpha"])
        assert listed.exit_code == 0, listed.output
        assert "#1  The user's locker code is 4512  (user_stated, personal," in listed.output

        found = cli.invoke(memory, ["search", *fleet, "alpha", "window seats"])
        assert "mode: hybrid" in found.output and "The user prefers window seats" in found.output
        assert "episode 1" in found.output

        pending = cli.invoke(memory, ["contradictions", *fleet, "alpha"])
        assert "disputed by (inferred): The user's locker code is 9981" in pending.output
        refused = cli.invoke(memory, ["contradictions", *fleet, "alpha", "--resolve", "1"])
        assert refused.exit_code != 0 and "--keep" in str(refused.exception)
        kept = cli.invoke(memory, ["contradictions", *fleet, "alpha", "--resolve", "1", "--keep", "old"])
        assert "contradiction 1: kept #1" in kept.output

        edited = cli.invoke(memory, ["edit", *fleet, "alpha", "2", "The user prefers aisle seats"])
        assert edited.output.strip() == "saved as #3, replacing #2"
        shown = cli.invoke(memory, ["show", *fleet, "alpha", "3"])
        assert "versions:" in shown.output and "[superseded]" in shown.output
        past = cli.invoke(memory, ["search", *fleet, "alpha", "seats", "--history"])
        assert past.exit_code == 0, past.output
        assert "#2 [superseded]  The user prefers window seats" in past.output
        assert "replaced by #3" in past.output and ".. now" in past.output

        forgot = cli.invoke(memory, ["forget", *fleet, "alpha", "1"])
        assert forgot.output.strip() == "forgot #1"
        assert "The user's locker code" not in cli.invoke(memory, ["list", *fleet, "alpha"]).output
        status = cli.invoke(memory, ["status", *fleet, "alpha"])
        assert "mode: hybrid (test, 64 dims)" in status.output

        missing = cli.invoke(memory, ["forget", *fleet, "alpha", "42"])
        assert missing.exit_code != 0 and "no fact with id 42" in str(missing.exception)


def test_the_operators_forget_leaves_no_copy_in_the_agents_storage_or_the_orchestrators(
    services: Services, seeded: MemoryStore
) -> None:
    from agent_runtime.workspace.versioned import Workspace, write_through

    fact = "The user's locker code is 4512"
    storage = services.paths.agent_storage("alpha")
    operator_copy = Workspace(services.paths.agent_dir("alpha"))
    write_through(storage, operator_copy.write)
    try:
        Workspace(storage).write("MEMORY.md", f"- {fact}\n- The user prefers window seats\n", "agent")
        (storage / "history").mkdir(exist_ok=True)
        (storage / "history" / "2025-05-01.jsonl").write_text(
            '{"id": "t1", "at": "2025-05-01T09:00:00Z", "role": "user", "content": "My locker code is 4512."}\n'
        )
        services.db.execute(
            "INSERT INTO inbox(id, agent, kind, sender, text, created_at, state, result) "
            "VALUES ('i1', 'alpha', 'operator_message', 'operator', 'My locker code is 4512. Note it.', "
            "'2025-05-01T09:00:00Z', 'done', '{\"text\": \"Noted: your locker code is 4512.\"}')"
        )
        services.db.execute(
            "INSERT INTO events(type, agent, at, data) VALUES ('item.done', 'alpha', '2025-05-01T09:00:00Z', ?)",
            ('{"reply": "Noted: your locker code is 4512."}',),
        )
        with live(services, "alpha") as url, operator_client(services, url) as operator:
            gone = operator.delete(f"{base()}/facts/1").json()
        assert gone["forgotten"] == [1] and "4512" not in str(gone)
        seeded.close()
        holding = sorted(
            str(path.relative_to(services.paths.root))
            for path in services.paths.root.rglob("*")
            if path.is_file() and b"4512" in path.read_bytes()
        )
        assert holding == []
        assert "window seats" in operator_copy.read("MEMORY.md")
        [row] = services.db.query("SELECT text, result FROM inbox WHERE id = 'i1'")
        assert row["text"] == "(forgotten) Note it."
    finally:
        write_through(storage, None)

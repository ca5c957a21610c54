"""Operator workspace routes: list, read, edit through the caps, history, diff, errors, auth."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from fastapi.testclient import TestClient

from agent_runtime.workspace.versioned import CAPS, Workspace
from orchestrator.services import Services
from orchestrator.testing.agent_link import link_agent

BASE = "/api/v1/agents/alpha/workspace"


def workspace(services: Services, agent: str = "alpha") -> Workspace:
    return Workspace(services.paths.agent_dir(agent))


def test_listing_shows_size_cap_and_fill(operator: TestClient, services: Services) -> None:
    response = operator.get(BASE)
    assert response.status_code == 200
    body = response.json()
    assert body["agent"] == "alpha"
    rows = {row["name"]: row for row in body["files"]}
    soul = rows["SOUL.md"]
    expected_size = len(b"# alpha\n\nYou are alpha.\n")
    cap = CAPS["SOUL.md"]
    assert cap is not None
    assert soul["size"] == expected_size
    assert soul["cap"] == cap
    assert soul["fill_pct"] == round(expected_size * 100 / cap, 1)
    assert soul["kind"] == "identity"
    assert soul["version"] == 1
    assert soul["author"] == "system"
    assert rows["SYSTEM.md"]["read_only"] is True
    assert rows["HEARTBEAT.md"]["cap"] is None
    assert rows["HEARTBEAT.md"]["fill_pct"] is None


def learnings(services: Services, agent: str = "alpha") -> Path:
    """The learnings folder in the agent's own storage (the operator's copy has none)."""
    return services.paths.agent_storage(agent) / "workspace" / "learnings"


def test_listing_includes_learnings(operator: TestClient, services: Services) -> None:
    link_agent(operator.portal, services, "alpha")
    (learnings(services) / "2025-01-02.md").write_text("- Always cite the source.\n")
    rows = {row["name"]: row for row in operator.get(BASE).json()["files"]}
    assert rows["learnings/2025-01-02.md"]["kind"] == "learning"
    assert rows["learnings/2025-01-02.md"]["editable"] is False
    content = operator.get(f"{BASE}/learnings/2025-01-02.md").json()
    assert content["content"] == "- Always cite the source.\n"
    assert content["version"] is None
    assert not (services.paths.workspace("alpha") / "learnings" / "2025-01-02.md").exists()


def test_without_its_agent_the_listing_has_the_operator_copy_and_learnings_are_503(
    operator: TestClient,
) -> None:
    rows = {row["name"]: row for row in operator.get(BASE).json()["files"]}
    assert "SOUL.md" in rows and not [name for name in rows if name.startswith("learnings/")]
    missing = operator.get(f"{BASE}/learnings/2025-01-02.md")
    assert missing.status_code == 503 and "alpha cannot answer" in missing.json()["message"]


def test_an_operator_edit_reaches_the_agents_working_copy(operator: TestClient, services: Services) -> None:
    agent = link_agent(operator.portal, services, "alpha")
    operator.put(f"{BASE}/SOUL.md", json={"content": "# alpha\n\nPushed.\n"})
    deadline = time.monotonic() + 10
    while agent.workspace.read("SOUL.md") != "# alpha\n\nPushed.\n" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert agent.workspace.read("SOUL.md") == "# alpha\n\nPushed.\n"


def test_read_live_and_past_versions(operator: TestClient, services: Services) -> None:
    workspace(services).write("SOUL.md", "# alpha\n\nSecond soul.\n", "agent", "tightened")
    live = operator.get(f"{BASE}/SOUL.md").json()
    assert live["content"] == "# alpha\n\nSecond soul.\n"
    assert live["version"] == 2
    assert live["latest_version"] == 2
    first = operator.get(f"{BASE}/SOUL.md", params={"version": 1}).json()
    assert first["content"] == "# alpha\n\nYou are alpha.\n"
    assert first["version"] == 1
    missing = operator.get(f"{BASE}/SOUL.md", params={"version": 9})
    assert missing.status_code == 404
    assert "no version 9" in missing.json()["message"]


def test_operator_edit_is_versioned_and_published(operator: TestClient, services: Services) -> None:
    response = operator.put(f"{BASE}/SOUL.md", json={"content": "# alpha\n\nCurious.\n", "reason": "tone"})
    assert response.status_code == 200
    assert response.json() == {"name": "SOUL.md", "size": len(b"# alpha\n\nCurious.\n"), "version": 2}
    assert workspace(services).read("SOUL.md") == "# alpha\n\nCurious.\n"
    last = workspace(services).history("SOUL.md")[-1]
    assert (last.author, last.reason, last.version) == ("operator", "tone", 2)
    events = services.events.recent(agent="alpha")
    changed = [e for e in events if e.type == "workspace.changed"]
    assert changed[-1].data["author"] == "operator"
    assert changed[-1].data["file"] == "SOUL.md"
    assert changed[-1].data["version"] == 2


def test_edit_over_cap_is_refused_with_413_and_file_unchanged(
    operator: TestClient, services: Services
) -> None:
    before = workspace(services).read("SOUL.md")
    cap = CAPS["SOUL.md"]
    assert cap is not None
    response = operator.put(f"{BASE}/SOUL.md", json={"content": "x" * (cap + 1)})
    assert response.status_code == 413
    body = response.json()
    assert body["error"] == "cap_exceeded"
    assert str(cap) in body["message"] and str(cap + 1) in body["message"]
    assert f"cap: {cap} bytes" in body["details"]
    assert f"size: {cap + 1} bytes" in body["details"]
    assert workspace(services).read("SOUL.md") == before
    assert len(workspace(services).history("SOUL.md")) == 1


def test_edit_exactly_at_cap_is_accepted(operator: TestClient, services: Services) -> None:
    cap = CAPS["SOUL.md"]
    assert cap is not None
    response = operator.put(f"{BASE}/SOUL.md", json={"content": "é" * (cap // 2)})
    assert response.status_code == 200
    assert response.json()["size"] == cap


def test_broken_interface_contract_is_refused_with_422(operator: TestClient, services: Services) -> None:
    before = workspace(services).read("INTERFACE.md")
    broken = "---\noperations:\n  - name: 9lives\n---\nbody\n"
    response = operator.put(f"{BASE}/INTERFACE.md", json={"content": broken})
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "invalid_content"
    assert "9lives" in body["message"]
    assert body["details"] and "identifier" in body["details"][0]
    assert workspace(services).read("INTERFACE.md") == before


def test_history_lists_every_version_with_author(operator: TestClient, services: Services) -> None:
    workspace(services).write("MEMORY.md", "# Memory\n- fact one\n", "agent", "flush")
    operator.put(f"{BASE}/MEMORY.md", json={"content": "# Memory\n- fact one\n- fact two\n"})
    workspace(services).write("MEMORY.md", "# Memory\n- fact two\n", "job", "condensed")
    body = operator.get(f"{BASE}/MEMORY.md/history").json()
    assert body["name"] == "MEMORY.md"
    versions = body["versions"]
    assert [v["version"] for v in versions] == [1, 2, 3, 4]
    assert [v["author"] for v in versions] == ["system", "agent", "operator", "job"]
    assert versions[1]["reason"] == "flush"
    assert versions[3]["size"] == len(b"# Memory\n- fact two\n")
    assert all(v["at"] for v in versions)


def test_diff_defaults_to_last_two_and_accepts_any_pair(operator: TestClient, services: Services) -> None:
    ws = workspace(services)
    ws.write("USER.md", "likes tea\n", "operator")
    ws.write("USER.md", "likes coffee\n", "agent")
    latest = operator.get(f"{BASE}/USER.md/diff").json()
    assert (latest["a"], latest["b"]) == (2, 3)
    assert "-likes tea\n" in latest["diff"]
    assert "+likes coffee\n" in latest["diff"]
    assert "USER.md@2" in latest["diff"]
    pair = operator.get(f"{BASE}/USER.md/diff", params={"a": 0, "b": 2}).json()
    assert "+likes tea\n" in pair["diff"]
    same = operator.get(f"{BASE}/USER.md/diff", params={"a": 3, "b": 3}).json()
    assert same["diff"] == ""
    missing = operator.get(f"{BASE}/USER.md/diff", params={"a": 1, "b": 42})
    assert missing.status_code == 404


def test_lowercase_names_resolve_to_workspace_files(operator: TestClient) -> None:
    assert operator.get(f"{BASE}/soul").json()["name"] == "SOUL.md"


def test_unknown_agent_is_404(operator: TestClient) -> None:
    for response in (
        operator.get("/api/v1/agents/ghost/workspace"),
        operator.get("/api/v1/agents/ghost/workspace/SOUL.md"),
        operator.put("/api/v1/agents/ghost/workspace/SOUL.md", json={"content": "x"}),
    ):
        assert response.status_code == 404
        assert response.json()["error"] == "unknown_agent"


def test_unknown_file_is_404(operator: TestClient) -> None:
    response = operator.get(f"{BASE}/NOTES.md")
    assert response.status_code == 404
    assert "SOUL.md" in response.json()["message"]


def test_path_escape_is_400(operator: TestClient, services: Services) -> None:
    secret = services.paths.token_file("alpha")
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("do-not-leak")
    for path in (
        f"{BASE}/..%2F..%2Ftokens%2Falpha",
        f"{BASE}/learnings%2F..%2F..%2F..%2Ftokens%2Falpha",
        f"{BASE}/%2Fetc%2Fpasswd",
    ):
        response = operator.get(path)
        assert response.status_code == 400, path
        assert "do-not-leak" not in response.text
    put = operator.put(f"{BASE}/..%2FSOUL.md", json={"content": "x"})
    assert put.status_code == 400


def test_symlinked_learning_is_refused(operator: TestClient, services: Services, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("outside the workspace")
    link_agent(operator.portal, services, "alpha")
    (learnings(services) / "link.md").symlink_to(outside)
    response = operator.get(f"{BASE}/learnings/link.md")
    assert response.status_code == 400
    assert "outside the workspace" not in response.text


def test_runtime_managed_files_are_not_editable(operator: TestClient, services: Services) -> None:
    response = operator.put(f"{BASE}/learnings/a.md", json={"content": "- y\n"})
    assert response.status_code == 400
    assert response.json()["error"] == "not_editable"
    history = operator.get(f"{BASE}/learnings/a.md/history")
    assert history.status_code == 400


def test_routes_need_the_operator_token(
    anonymous: TestClient, agent_client: TestClient, services: Services
) -> None:
    routes = [
        ("GET", BASE),
        ("GET", f"{BASE}/SOUL.md"),
        ("GET", f"{BASE}/SOUL.md/history"),
        ("GET", f"{BASE}/SOUL.md/diff"),
        ("PUT", f"{BASE}/SOUL.md"),
    ]
    for method, path in routes:
        body = {"content": "hijacked"} if method == "PUT" else None
        assert anonymous.request(method, path, json=body).status_code == 401, path
        assert agent_client.request(method, path, json=body).status_code == 403, path
    assert "hijacked" not in workspace(services).read("SOUL.md")


def test_unknown_body_fields_are_refused(operator: TestClient) -> None:
    response = operator.put(f"{BASE}/SOUL.md", json={"content": "x", "author": "agent"})
    assert response.status_code == 422


def test_host_write_failure_is_a_clear_error(operator: TestClient, services: Services) -> None:
    versions = services.paths.agent_dir("alpha") / "versions" / "USER"
    shutil.rmtree(versions)
    versions.write_text("not a folder")  # the version store cannot be opened
    response = operator.put(f"{BASE}/USER.md", json={"content": "new text\n"})
    assert response.status_code == 500
    body = response.json()
    assert body["error"] == "write_failed"
    assert "USER.md could not be written on the host" in body["message"]

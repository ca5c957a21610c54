"""Screenshots in the operator's workspace routes: listed with their newest version, their
history kept, each version served as a PNG, text reads and diffs refused with a clear message;
handed to the agent's working copy when saved and when the agent connects."""

from __future__ import annotations

import base64
import time

from fastapi.testclient import TestClient

from agent_runtime.workspace.binary import VersionedBinaries
from agent_runtime.workspace.versioned import WORKSPACE_FILES
from orchestrator.browser.screenshots import ScreenshotPlace, ScreenshotShelf
from orchestrator.services import Services
from orchestrator.testing.agent_link import link_agent
from orchestrator.workspaces.access import workspace_copy

BASE = "/api/v1/agents/alpha/workspace"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def save(services: Services, name: str, data: bytes, url: str) -> None:
    files = VersionedBinaries(services.paths.agent_dir("alpha"))
    files.write(name, data, "browser", url, cap=2**20, quota=2**20)


def test_screenshots_are_listed_with_their_versions(operator: TestClient, services: Services) -> None:
    before = {row["name"]: row for row in operator.get(BASE).json()["files"]}
    save(services, "front", PNG, "http://127.0.0.1/a")
    save(services, "front", PNG + b"2", "http://127.0.0.1/b")
    rows = {row["name"]: row for row in operator.get(BASE).json()["files"]}
    shot = rows.pop("screenshots/front.png")
    assert (shot["kind"], shot["version"], shot["author"], shot["size"]) == (
        "screenshot",
        2,
        "browser",
        len(PNG) + 1,
    )
    assert (shot["editable"], shot["read_only"]) == (False, True)
    assert rows == before  # the other files' rows are as they were

    history = operator.get(f"{BASE}/screenshots/front.png/history").json()
    assert history["name"] == "screenshots/front.png"
    assert [(v["version"], v["author"], v["reason"]) for v in history["versions"]] == [
        (1, "browser", "http://127.0.0.1/a"),
        (2, "browser", "http://127.0.0.1/b"),
    ]


def test_each_version_is_served_as_a_png(operator: TestClient, services: Services) -> None:
    save(services, "front", PNG, "http://127.0.0.1/a")
    save(services, "front", PNG + b"2", "http://127.0.0.1/b")
    first = operator.get("/api/v1/agents/alpha/screenshots/front.png?version=1")
    assert first.status_code == 200 and first.headers["content-type"] == "image/png"
    assert first.content == PNG
    assert operator.get("/api/v1/agents/alpha/screenshots/front.png").content == PNG + b"2"
    for wrong in ("front.png?version=3", "..%2Fstate.db", "other.png", "FRONT.png"):
        assert operator.get(f"/api/v1/agents/alpha/screenshots/{wrong}").status_code == 404, wrong
    assert operator.get("/api/v1/agents/nobody/screenshots/front.png").status_code == 404


def test_a_screenshot_is_not_read_or_diffed_as_text(operator: TestClient, services: Services) -> None:
    save(services, "front", PNG, "http://127.0.0.1/a")
    read = operator.get(f"{BASE}/screenshots/front.png")
    assert read.status_code == 400 and "PNG image" in read.json()["message"]
    assert "/api/v1/agents/alpha/screenshots/front.png" in read.json()["message"]
    diffed = operator.get(f"{BASE}/screenshots/front.png/diff")
    assert diffed.status_code == 400 and "no text diff" in diffed.json()["message"]
    assert operator.get(f"{BASE}/screenshots/missing.png/history").status_code == 404
    assert operator.get(f"{BASE}/screenshots/..%2F..%2FSOUL.md/history").status_code in (400, 404)


def test_a_saved_screenshot_reaches_the_agents_working_copy(operator: TestClient, services: Services) -> None:
    agent = link_agent(operator.portal, services, "alpha")
    shelf = ScreenshotShelf(
        ScreenshotPlace(services.paths.agent_dir, {}, saved=services.workspaces.push_binary)
    )
    shelf.keep("alpha", "front", PNG, "http://127.0.0.1/a")
    mirrored = agent.settings.data_dir / "workspace" / "screenshots" / "front.png"
    deadline = time.monotonic() + 10
    while not mirrored.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mirrored.read_bytes() == PNG


def test_the_whole_copy_sent_when_the_agent_connects_has_the_newest_screenshots(services: Services) -> None:
    save(services, "front", PNG, "http://127.0.0.1/a")
    save(services, "front", PNG + b"2", "http://127.0.0.1/b")
    copy = workspace_copy(services.workspaces.open("alpha"))
    binaries = [(f.name, f.binary_b64) for f in copy.files if f.binary_b64 is not None]
    assert binaries == [("screenshots/front.png", base64.b64encode(PNG + b"2").decode())]
    assert {f.name for f in copy.files if f.binary_b64 is None} == set(WORKSPACE_FILES)

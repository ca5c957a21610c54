"""Screenshots saved as versions of workspace/screenshots/<name>.png: capped per screenshot and by
the workspace quota, nothing written when refused, a name that could leave the folder refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_runtime.workspace.binary import VersionedBinaries
from orchestrator.browser.screenshots import ScreenshotPlace, ScreenshotShelf, default_name
from orchestrator.browser.session import SessionFailed
from orchestrator.config.browser import BrowserPolicy

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00IHDR" + bytes(range(256)) * 8


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def shelf(
    tmp_path: Path,
    policy: BrowserPolicy,
    quota: int = 8 * 1024 * 1024,
    handed: list[tuple[str, str]] | None = None,
) -> ScreenshotShelf:
    def hand_on(agent: str, name: str, _png: bytes) -> None:
        if handed is not None:
            handed.append((agent, name))

    return ScreenshotShelf(ScreenshotPlace(lambda agent: tmp_path / agent, {"scout": policy}, quota, hand_on))


def test_two_screenshots_of_one_name_are_two_versions(tmp_path: Path) -> None:
    handed: list[tuple[str, str]] = []
    shelves = shelf(tmp_path, BrowserPolicy(), handed=handed)
    first = shelves.keep("scout", "front", PNG, "http://127.0.0.1:8000/a")
    second = shelves.keep("scout", "front", PNG + b"more", "http://127.0.0.1:8000/b")
    assert (first.name, first.version, second.version) == ("screenshots/front.png", 1, 2)
    files = shelves.files("scout")
    versions = files.history("front.png")
    assert [(v.version, v.author, v.reason, v.size) for v in versions] == [
        (1, "browser", "http://127.0.0.1:8000/a", len(PNG)),
        (2, "browser", "http://127.0.0.1:8000/b", len(PNG) + 4),
    ]
    assert files.read_version("screenshots/front.png", 1) == PNG
    assert (tmp_path / "scout/workspace/screenshots/front.png").read_bytes() == PNG + b"more"
    assert handed == [("scout", "screenshots/front.png")] * 2


def test_a_screenshot_over_the_cap_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    shelves = shelf(tmp_path, BrowserPolicy(screenshot_bytes="1KiB"))
    with pytest.raises(
        SessionFailed, match=r"over tools\.browser\.screenshot_bytes \(1KiB\); nothing was saved"
    ):
        shelves.keep("scout", "front", PNG + bytes(2048), "http://127.0.0.1/")
    assert not (tmp_path / "scout").exists()


def test_a_screenshot_over_the_workspace_quota_is_refused_and_leaves_the_earlier_ones(tmp_path: Path) -> None:
    shelves = shelf(tmp_path, BrowserPolicy(), quota=5 * len(PNG))
    shelves.keep("scout", "front", PNG, "http://127.0.0.1/")
    before = {name: (tmp_path / name).read_bytes() for name in files_under(tmp_path)}
    with pytest.raises(SessionFailed, match="over the workspace quota"):
        shelves.keep("scout", "other", PNG + b"x" * len(PNG), "http://127.0.0.1/")
    after = {name: (tmp_path / name).read_bytes() for name in files_under(tmp_path)}
    assert after == before
    assert shelves.files("scout").names() == ["front"]


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", "", "Front", "x.png/..", "/etc/passwd", "a" * 65])
def test_a_name_that_could_leave_the_folder_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(SessionFailed, match="is not a name for a file of screenshots/"):
        shelf(tmp_path, BrowserPolicy()).keep("scout", name, PNG, "http://127.0.0.1/")
    assert files_under(tmp_path) == []


def test_not_a_png_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SessionFailed, match="did not return a PNG"):
        shelf(tmp_path, BrowserPolicy()).keep("scout", "front", b"<html>", "http://127.0.0.1/")
    assert files_under(tmp_path) == []


def test_only_the_newest_versions_of_a_name_are_kept(tmp_path: Path) -> None:
    shelves = shelf(tmp_path, BrowserPolicy(screenshots_kept=2))
    for n in range(4):
        shelves.keep("scout", "front", PNG + bytes([n]), "http://127.0.0.1/")
    files = shelves.files("scout")
    assert [v.version for v in files.history("front")] == [3, 4]
    assert sorted(p.name for p in (files.versions_root / "front").glob("*.png")) == [
        "000003.png",
        "000004.png",
    ]
    assert files.read_version("front", 4) == PNG + bytes([3])


def test_an_unnamed_screenshot_is_named_after_its_item() -> None:
    assert default_name("Item-7") == "item-7"
    assert default_name("chat:alice/42") == "chat-alice-42"
    assert default_name("") == "screenshot"
    assert default_name("__") == "screenshot"
    assert len(default_name("x" * 200)) == 64


def test_the_agent_mirror_refuses_a_path_name(tmp_path: Path) -> None:
    files = VersionedBinaries(tmp_path)
    files.mirror("screenshots/front.png", PNG)
    assert (tmp_path / "workspace/screenshots/front.png").read_bytes() == PNG
    with pytest.raises(ValueError, match="not a name"):
        files.mirror("screenshots/../../evil.png", PNG)

"""The browser tools as a user and as an attacker: real sandboxes on the local Docker engine, pages
served on loopback only, every page request through the egress proxy."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from orchestrator.browser import BROWSER_ACTION, BROWSER_REFUSED
from orchestrator.browser.arguments import (
    BROWSER_CLICK,
    BROWSER_EVALUATE,
    BROWSER_NAVIGATE,
    BROWSER_SCREENSHOT,
    BROWSER_SNAPSHOT,
    BROWSER_TYPE,
)
from orchestrator.browser.fence import fence_rules, fence_usable
from orchestrator.browser.proxy import ProxiedRequest, ProxyLog
from orchestrator.browser.sandbox import LABEL_BROWSER_OF
from orchestrator.config.secrets import SecretSource
from orchestrator.host_tools.base import HostToolRefused
from tests.orchestrator.browser.conftest import PASSWORD, Browsing, browse
from tests.orchestrator.browser.pages import (
    CDP_PROBE_PAGE,
    FETCHER_PAGE,
    JS_PAGE,
    LOGIN_PAGE,
    MEMORY_PAGE,
    NEVER_ENDING,
    Listener,
    LocalSite,
)

pytestmark = pytest.mark.docker


async def snapshots_until(b: Browsing, title: str) -> list[str]:
    """Snapshots of the page until its script has set `title` (its fetches settle after its load)."""
    taken = [(await b.call(BROWSER_SNAPSHOT)).output]
    for _ in range(80):
        if f"title: {title}" in taken[-1]:
            break
        await asyncio.sleep(0.25)
        taken.append((await b.call(BROWSER_SNAPSHOT)).output)
    assert f"title: {title}" in taken[-1]
    return taken


def ref_of(snapshot: str, line_start: str) -> str:
    line = next(line for line in snapshot.splitlines() if line.startswith(line_start))
    return line.rsplit("[ref=", 1)[1].rstrip("]")


def test_a_page_whose_content_only_javascript_writes_reads_as_rendered(
    tmp_path: Path, browser_image_tag: str, site: LocalSite
) -> None:
    site.pages["/js"] = JS_PAGE

    async def scenario(b: Browsing) -> None:
        result = await b.call(BROWSER_NAVIGATE, url=site.url("/js"))
        assert result.ok, result.output
        assert "title: Rendered" in result.output
        assert "rendered by script 42" in result.output
        for _ in range(2):
            shot = await b.call(BROWSER_SCREENSHOT, name="front")
            assert shot.ok, shot.output
        for wrong in ("../escape", "a/b", "Front"):
            refused = await b.call(BROWSER_SCREENSHOT, name=wrong)
            assert not refused.ok and "invalid arguments: name" in refused.output
        with pytest.raises(HostToolRefused, match=r"tools\.browser\.evaluate"):
            await b.call(BROWSER_EVALUATE, expression="document.title")

    browsing = browse(tmp_path, browser_image_tag, site, scenario)
    assert "/js" in site.paths()
    screenshots = browsing.shelf.files("scout")
    assert screenshots.names() == ["front"]
    versions = screenshots.history("front")
    assert [(v.version, v.author) for v in versions] == [(1, "browser"), (2, "browser")]
    assert versions[1].reason == site.url("/js")
    assert screenshots.read_version("front", 1).startswith(b"\x89PNG")
    assert sorted(p.name for p in screenshots.root.iterdir()) == ["front.png"]
    assert f'"tool": "{BROWSER_NAVIGATE}"' in browsing.recorded()


def test_a_login_form_gets_the_secret_the_agent_never_sees(
    tmp_path: Path, browser_image_tag: str, site: LocalSite
) -> None:
    site.pages["/signin"] = LOGIN_PAGE
    seen: dict[str, str] = {}

    async def scenario(b: Browsing) -> None:
        assert (await b.call(BROWSER_NAVIGATE, url=site.url("/signin"))).ok
        snapshot = (await b.call(BROWSER_SNAPSHOT)).output
        user, password = ref_of(snapshot, 'textbox "User"'), ref_of(snapshot, 'textbox "Password" [password]')
        assert (await b.call(BROWSER_TYPE, ref=user, text="alice")).ok
        typed = await b.call(BROWSER_TYPE, ref=password, text="{{secret:site_password}}")
        assert typed.ok, typed.output
        # The page echoes the field into its text: what reaches the agent is redacted.
        seen["snapshot"] = (await b.call(BROWSER_SNAPSHOT)).output
        assert "you typed" in seen["snapshot"]
        assert ref_of(seen["snapshot"], 'textbox "User"') == user  # refs stay on their elements
        signed_in = await b.call(BROWSER_CLICK, ref=ref_of(seen["snapshot"], 'button "Sign in"'))
        assert signed_in.ok, signed_in.output
        assert "signed in" in signed_in.output
        seen["after"] = signed_in.output

    browsing = browse(tmp_path, browser_image_tag, site, scenario)
    posted = [s.body.decode() for s in site.seen if s.method == "POST"]
    assert posted == [f"user=alice&password={PASSWORD}"]
    for text in [*seen.values(), browsing.recorded()]:
        assert PASSWORD not in text


def test_a_secret_bound_to_another_host_is_not_typed_into_an_allowed_page(
    tmp_path: Path, browser_image_tag: str, site: LocalSite
) -> None:
    site.pages["/signin"] = LOGIN_PAGE
    bound = SecretSource(env="SITE_PASSWORD", hosts=["login.bank.test"], places=["body"])

    async def scenario(b: Browsing) -> None:
        assert (await b.call(BROWSER_NAVIGATE, url=site.url("/signin"))).ok
        password = ref_of((await b.call(BROWSER_SNAPSHOT)).output, 'textbox "Password" [password]')
        with pytest.raises(HostToolRefused, match=r"secrets\.site_password\.hosts"):
            await b.call(BROWSER_TYPE, ref=password, text="{{secret:site_password}}", submit=True)

    browsing = browse(tmp_path, browser_image_tag, site, scenario, secret=bound)
    assert [s for s in site.seen if s.method == "POST"] == []
    assert PASSWORD not in browsing.recorded()


def test_a_redirect_to_a_refused_host_is_refused(
    tmp_path: Path, browser_image_tag: str, site: LocalSite, listener: Listener
) -> None:
    async def scenario(b: Browsing) -> None:
        target = f"http://127.0.0.1:{listener.port}/internal"
        result = await b.call(BROWSER_NAVIGATE, url=site.url(f"/redirect?to={target}"))
        assert "tools.http.allow" in result.output

    browsing = browse(tmp_path, browser_image_tag, site, scenario)
    assert listener.hits == []
    assert "tools.http.allow" in browsing.recorded()


def test_a_page_reaching_for_private_addresses_and_other_host_ports_reaches_nothing(
    tmp_path: Path, browser_image_tag: str, site: LocalSite, listener: Listener
) -> None:
    site.pages["/fetch"] = FETCHER_PAGE
    site.pages["/start"] = JS_PAGE

    async def resolver(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]  # what an attacker's DNS answers for its own name

    async def scenario(b: Browsing) -> None:
        assert (await b.call(BROWSER_NAVIGATE, url=site.url("/start"))).ok
        opened = next(iter(b.sessions._sessions.values()))
        targets = [
            f"http://127.0.0.1:{listener.port}/loopback",
            f"http://{opened.sandbox.gateway}:{listener.port}/gateway",
            f"http://attacker.example:{listener.port}/rebound",
            f"https://127.0.0.1:{listener.port}/tunnel",
        ]
        result = await b.call(BROWSER_NAVIGATE, url=site.url("/fetch?targets=" + ",".join(targets)))
        assert result.ok, result.output
        answers = [result.output, *await snapshots_until(b, "Fetched")]
        assert "requests refused by your egress policy" in "".join(answers)

    browse(tmp_path, browser_image_tag, site, scenario, resolver=resolver)
    assert listener.hits == []


def test_a_page_that_never_stops_loading_is_cut_at_the_time_cap(
    tmp_path: Path, browser_image_tag: str, site: LocalSite
) -> None:
    async def scenario(b: Browsing) -> None:
        result = await b.call(BROWSER_NAVIGATE, url=site.url(NEVER_ENDING))
        assert not result.ok
        assert "tools.browser.timeout_s (4 s)" in result.output

    browse(tmp_path, browser_image_tag, site, scenario, browser={"timeout_s": 4})


def test_a_page_allocating_memory_without_end_stops_at_the_memory_cap(
    tmp_path: Path, browser_image_tag: str, site: LocalSite, docker_client: Any
) -> None:
    site.pages["/hungry"] = MEMORY_PAGE
    site.pages["/js"] = JS_PAGE
    cap = 384 * 1024 * 1024

    async def scenario(b: Browsing) -> None:
        loaded = await b.call(BROWSER_NAVIGATE, url=site.url("/hungry"))
        opened = next(iter(b.sessions._sessions.values()), None)
        if opened is not None:  # the page loaded before it ate its cap: the next action finds it dead
            limits = docker_client.api.inspect_container(opened.sandbox.container)["HostConfig"]
            assert limits["Memory"] == cap and limits["MemorySwap"] == cap
            loaded = await b.call(BROWSER_SNAPSHOT)
        assert not loaded.ok
        assert "the page crashed" in loaded.output or "timeout_s" in loaded.output
        assert b.sessions.open_count() == 0
        # The agent goes on with a fresh sandbox.
        again = await b.call(BROWSER_NAVIGATE, url=site.url("/js"))
        assert again.ok, again.output

    browse(tmp_path, browser_image_tag, site, scenario, browser={"memory": "384m", "timeout_s": 20})


def test_a_hostile_page_cannot_reach_the_devtools_port(
    tmp_path: Path, browser_image_tag: str, site: LocalSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.pages["/probe"] = CDP_PROBE_PAGE
    through_proxy: list[ProxiedRequest] = []
    keep = ProxyLog.add
    monkeypatch.setattr(
        ProxyLog, "add", lambda log, request: (through_proxy.append(request), keep(log, request))
    )

    async def scenario(b: Browsing) -> None:
        result = await b.call(BROWSER_NAVIGATE, url=site.url("/probe"))
        assert result.ok, result.output
        snapshot = (await snapshots_until(b, "Probed"))[-1]
        assert "READ" not in snapshot and "websocket OPEN" not in snapshot
        assert snapshot.count("blocked") == 4

    browse(tmp_path, browser_image_tag, site, scenario)
    refused = {r.url for r in through_proxy if "loopback" in r.refused or "tools.http.allow" in r.refused}
    assert {"http://127.0.0.1:9222/json/version", "http://localhost:9222/json/list"} <= refused
    assert "https://127.0.0.1:9222/" in refused  # the WebSocket, asked for as a CONNECT tunnel


def test_the_sandbox_is_fenced_and_removed_with_its_session(
    tmp_path: Path, browser_image_tag: str, site: LocalSite, docker_client: Any
) -> None:
    site.pages["/js"] = JS_PAGE
    found: dict[str, Any] = {}

    async def scenario(b: Browsing) -> None:
        assert (await b.call(BROWSER_NAVIGATE, url=site.url("/js"))).ok
        opened = next(iter(b.sessions._sessions.values()))
        found["container"] = docker_client.api.inspect_container(opened.sandbox.container)
        found["network"] = docker_client.api.inspect_network(opened.sandbox.network)
        found["fence"] = fence_rules(opened.sandbox.name)
        found["proxy port"] = opened.proxy.port

    browse(tmp_path, browser_image_tag, site, scenario)
    config, host = found["container"]["Config"], found["container"]["HostConfig"]
    assert config["User"] == "10001:10001"
    assert host["ReadonlyRootfs"] is True and host["CapDrop"] == ["ALL"]
    assert "no-new-privileges:true" in host["SecurityOpt"]
    assert found["network"]["Internal"] is True
    if fence_usable():
        assert "-j REJECT" in found["fence"][-1]
        assert any(f"--dport {found['proxy port']} -j ACCEPT" in rule for rule in found["fence"])
    left = docker_client.api.containers(
        all=True, filters={"label": f"{LABEL_BROWSER_OF}=flt-test-browser/scout"}
    )
    assert left == []


def test_a_url_outside_the_policy_is_refused_before_any_sandbox(
    tmp_path: Path, browser_image_tag: str, site: LocalSite
) -> None:
    async def scenario(b: Browsing) -> None:
        with pytest.raises(HostToolRefused, match=r"tools\.http\.allow"):
            await b.call(BROWSER_NAVIGATE, url="http://127.0.0.1:1/")
        assert b.sessions.open_count() == 0
        with pytest.raises(HostToolRefused, match=r"tools\.http\.secrets"):
            await b.call(BROWSER_TYPE, ref="e1", text="{{secret:undeclared}}")
        assert (await b.call(BROWSER_CLICK, ref="nonsense")).ok is False

    browsing = browse(tmp_path, browser_image_tag, site, scenario)
    assert BROWSER_REFUSED in browsing.recorded()
    assert BROWSER_ACTION in browsing.recorded()


def test_the_session_closes_when_its_item_ends(
    tmp_path: Path, browser_image_tag: str, site: LocalSite
) -> None:
    site.pages["/js"] = JS_PAGE

    async def scenario(b: Browsing) -> None:
        assert (await b.call(BROWSER_NAVIGATE, url=site.url("/js"))).ok
        await asyncio.to_thread(b.sessions.item_ended, "scout", "another-item")
        await asyncio.sleep(0.2)
        assert b.sessions.open_count("scout") == 1
        # The agent's acknowledgement arrives on another thread than the sessions' loop.
        await asyncio.to_thread(b.sessions.item_ended, "scout", "item-1")
        for _ in range(100):
            if b.sessions.open_count("scout") == 0:
                break
            await asyncio.sleep(0.1)
        assert b.sessions.open_count("scout") == 0

    browse(tmp_path, browser_image_tag, site, scenario)


def test_sandboxes_left_by_a_stopped_orchestrator_are_removed(
    tmp_path: Path, browser_image_tag: str, site: LocalSite, docker_client: Any
) -> None:
    site.pages["/js"] = JS_PAGE
    left: dict[str, Any] = {}

    async def stopped_without_closing(b: Browsing) -> None:
        assert (await b.call(BROWSER_NAVIGATE, url=site.url("/js"))).ok
        opened = next(iter(b.sessions._sessions.values()))
        b.sessions._sessions.clear()
        await opened.page.close()
        await opened.proxy.close()
        left["sandbox"] = opened.sandbox

    browse(tmp_path / "first", browser_image_tag, site, stopped_without_closing)
    sandbox = left["sandbox"]
    assert docker_client.api.inspect_container(sandbox.container)["State"]["Running"]

    async def next_run(b: Browsing) -> None:
        assert (await b.call(BROWSER_NAVIGATE, url=site.url("/js"))).ok

    browse(tmp_path / "second", browser_image_tag, site, next_run)
    assert docker_client.api.containers(all=True, filters={"id": sandbox.container}) == []
    assert docker_client.api.networks(ids=[sandbox.network]) == []
    assert fence_rules(sandbox.name) == []

"""Serving the dashboard: token exchange for a cookie, static files, security headers."""

from __future__ import annotations

import asyncio

import httpx
from fastapi import FastAPI
from fastapi.testclient import TestClient

from orchestrator.services import Services


def test_without_token_the_page_explains_how_to_sign_in(anonymous: TestClient) -> None:
    response = anonymous.get("/")
    assert response.status_code == 401
    assert "flotilla up" in response.text
    assert "app.js" not in response.text


def test_token_is_exchanged_for_an_http_only_cookie(anonymous: TestClient, services: Services) -> None:
    response = anonymous.get("/", params={"token": services.operator_token}, follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"flotilla_token={services.operator_token}")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    page = anonymous.get("/")
    assert page.status_code == 200
    assert '<script src="/dashboard/static/app.js"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    # The cookie also opens the API to the page's own requests.
    assert anonymous.get("/api/v1/agents/alpha/workspace").status_code == 200


def test_agent_tokens_do_not_open_the_dashboard(app: FastAPI, services: Services) -> None:
    token = services.tokens.mint("alpha")
    with TestClient(app) as client:
        assert client.get("/", params={"token": token}, follow_redirects=False).status_code == 401
        client.cookies.set("flotilla_token", token)
        assert client.get("/").status_code == 401
        assert client.get("/dashboard/static/app.js").status_code == 403


def test_static_files_are_served_with_their_types(operator: TestClient) -> None:
    types = {"app.js": "text/javascript", "chart.js": "text/javascript", "style.css": "text/css"}
    for name, media in types.items():
        response = operator.get(f"/dashboard/static/{name}")
        assert response.status_code == 200, name
        assert response.headers["content-type"].startswith(media)
        assert response.content
    assert operator.get("/dashboard/static/missing.js").status_code == 404
    assert operator.get("/dashboard/static/__init__.py").status_code == 404
    assert operator.get("/dashboard/static/..%2F__init__.py").status_code == 404


def test_static_files_need_the_operator(anonymous: TestClient) -> None:
    assert anonymous.get("/dashboard/static/app.js").status_code == 401


def test_dashboard_assets_reference_no_remote_resource(operator: TestClient) -> None:
    for name in ("app.js", "chart.js", "style.css"):
        text = operator.get(f"/dashboard/static/{name}").text
        assert "https://" not in text and "//cdn" not in text, name
    page = operator.get("/").text
    assert "https://" not in page


def test_info_lists_the_fleet(operator: TestClient) -> None:
    info = operator.get("/dashboard/info.json").json()
    assert info["fleet"] == "optest"
    assert [a["name"] for a in info["agents"]] == ["alpha", "beta"]
    assert info["agents"][0]["role"] == "researcher"


def test_dashboard_alias_redirects(anonymous: TestClient) -> None:
    response = anonymous.get("/dashboard", follow_redirects=False)
    assert response.status_code == 307
    assert response.headers["location"] == "/"


def test_dashboard_is_refused_to_peers_off_this_machine(app: FastAPI, services: Services) -> None:
    token = {"token": services.operator_token}

    async def status(peer: str, path: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=(peer, 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://orchestrator") as client:
            return await client.get(path, params=token)

    refused = asyncio.run(status("172.30.0.5", "/"))
    assert refused.status_code == 403
    assert "this machine only" in refused.json()["message"]
    assert asyncio.run(status("172.30.0.5", "/dashboard/static/app.js")).status_code == 403
    assert asyncio.run(status("127.0.0.1", "/")).status_code == 303
    assert asyncio.run(status("::1", "/")).status_code == 303
    app.state.dashboard_remote = True
    assert asyncio.run(status("172.30.0.5", "/")).status_code == 303

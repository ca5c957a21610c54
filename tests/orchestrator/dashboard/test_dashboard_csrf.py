"""The dashboard's cookie opens no door to another site: a request it authenticates that changes
something needs the dashboard's own header and a same-origin Origin."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from orchestrator.api.csrf import CSRF_HEADER
from orchestrator.services import Services

SEND = "/api/v1/agents/alpha/messages"
MESSAGE = {"text": "hello"}
SAME_ORIGIN = "http://testserver"


@pytest.fixture
def browser(app: FastAPI, services: Services) -> Iterator[TestClient]:
    """A client holding only the dashboard's cookie, as a browser does after signing in."""
    with TestClient(app) as client:
        client.cookies.set("flotilla_token", services.operator_token)
        yield client


def test_a_cross_site_form_post_is_refused(browser: TestClient, services: Services) -> None:
    # What an HTML form on another site sends: the cookie, its own Origin, no custom header.
    forged = browser.post(SEND, json=MESSAGE, headers={"origin": "https://evil.example"})
    assert forged.status_code == 403
    assert CSRF_HEADER in forged.json()["message"]
    # The header alone does not help a request whose Origin is another site.
    cross = browser.post(SEND, json=MESSAGE, headers={"origin": "https://evil.example", CSRF_HEADER: "1"})
    assert cross.status_code == 403
    assert "cross-site" in cross.json()["message"]
    fetched = browser.post(SEND, json=MESSAGE, headers={"sec-fetch-site": "cross-site", CSRF_HEADER: "1"})
    assert fetched.status_code == 403
    assert services.inbox.pending("alpha") == 0


def test_the_dashboards_own_requests_pass(browser: TestClient, services: Services) -> None:
    own = browser.post(SEND, json=MESSAGE, headers={"origin": SAME_ORIGIN, CSRF_HEADER: "1"})
    assert own.status_code == 200, own.text
    no_origin = browser.post(SEND, json=MESSAGE, headers={"sec-fetch-site": "same-origin", CSRF_HEADER: "1"})
    assert no_origin.status_code == 200, no_origin.text
    # Reading needs no header: a cross-site page cannot read the answer anyway.
    assert browser.get("/api/v1/agents/alpha/inbox").status_code == 200
    assert services.inbox.pending("alpha") == 2


def test_a_bearer_token_is_not_ambient_and_needs_no_header(operator: TestClient) -> None:
    assert (
        operator.post(SEND, json=MESSAGE, headers={"origin": "https://elsewhere.example"}).status_code == 200
    )


PAUSE = "/api/v1/agents/alpha/pause"


@pytest.mark.parametrize("query", ["?token=", "?token=wrong", "?token=&token=", "?token"])
def test_an_empty_or_wrong_token_in_the_query_is_a_401_not_the_cookie(
    browser: TestClient, services: Services, query: str
) -> None:
    # A form on another page of the same site: the cookie rides along, the query names a token
    # that is no token. The cookie must not stand in for it.
    forged = browser.post(PAUSE + query, headers={"origin": "https://evil.example"})
    assert forged.status_code == 401, forged.text
    same_site = browser.post(PAUSE + query, headers={"sec-fetch-site": "same-site"})
    assert same_site.status_code == 401, same_site.text
    assert browser.get("/api/v1/agents/alpha/inbox" + query).status_code == 401
    assert services.inbox.pending("alpha") == 0


@pytest.mark.parametrize("header", ["Basic b3BlcmF0b3I6eA==", "Bearer", "Bearer wrong"])
def test_a_bad_authorization_header_is_a_401_not_the_cookie(browser: TestClient, header: str) -> None:
    sent = browser.post(PAUSE, headers={"authorization": header, "origin": "http://testserver"})
    assert sent.status_code == 401, sent.text


def test_a_query_token_proves_itself_and_is_not_ambient(browser: TestClient, services: Services) -> None:
    token = services.operator_token
    sent = browser.post(
        f"{SEND}?token={token}", json=MESSAGE, headers={"origin": "https://elsewhere.example"}
    )
    assert sent.status_code == 200, sent.text


def test_the_dashboard_cookie_is_secure_over_tls(app: FastAPI, services: Services) -> None:
    token = services.operator_token
    with TestClient(app, base_url="https://testserver") as tls:
        signed_in = tls.get(f"/?token={token}", follow_redirects=False)
    assert signed_in.status_code == 303
    assert "secure" in signed_in.headers["set-cookie"].lower()
    with TestClient(app) as plain:
        signed_in = plain.get(f"/?token={token}", follow_redirects=False)
    assert "secure" not in signed_in.headers["set-cookie"].lower()

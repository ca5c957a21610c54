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

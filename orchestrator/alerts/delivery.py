"""Webhook delivery: the payload formats and one POST per attempt."""

from __future__ import annotations

import os
from typing import Any

import httpx

from orchestrator.alerts.rules import Firing
from orchestrator.config.alerts import WebhookConfig


class DeliveryFailed(Exception):
    """One attempt did not reach the webhook or was refused; the message says why."""


def payload_for(webhook: WebhookConfig, fleet: str, firing: Firing) -> dict[str, Any]:
    if webhook.format == "slack":
        where = f" ({firing.agent})" if firing.agent else ""
        mark = ":white_check_mark: resolved:" if firing.resolved else ":rotating_light:"
        return {"text": f"{mark} [{fleet}] {firing.title}{where}: {firing.summary}"}
    return {
        "fleet": fleet,
        "alert": firing.title,
        "status": "resolved" if firing.resolved else "firing",
        "agent": firing.agent,
        "summary": firing.summary,
        "at": firing.at.isoformat(),
        "detail": firing.detail,
    }


def _headers(webhook: WebhookConfig) -> dict[str, str]:
    headers = {"content-type": "application/json", "user-agent": "flotilla-alerts"}
    for name, env in webhook.headers_env.items():
        value = os.environ.get(env)
        if value is None:
            raise DeliveryFailed(f"header {name}: environment variable {env} is not set on the host")
        headers[name] = value
    return headers


class WebhookSender:
    """Posts alerts; one client for the orchestrator's life, made with the first alert (it loads
    the system's trust store, tens of milliseconds of CPU, and most fleets never send one)."""

    def __init__(self, client: httpx.Client | None = None) -> None:
        self._client = client

    def _http(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(follow_redirects=False)
        return self._client

    def send(self, webhook: WebhookConfig, payload: dict[str, Any]) -> None:
        try:
            response = self._http().post(
                webhook.url, json=payload, headers=_headers(webhook), timeout=webhook.timeout_s
            )
        except httpx.HTTPError as exc:
            raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from None
        if response.status_code >= 300:
            raise DeliveryFailed(f"HTTP {response.status_code}: {response.text[:200]}")

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

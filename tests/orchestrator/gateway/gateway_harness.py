"""Helpers for the gateway tests: an orchestrator with a live gateway and its clients."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import openai

REPO_ROOT = Path(__file__).resolve().parents[3]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from orchestrator.gateway.retry import RetryPolicy  # noqa: E402
from orchestrator.gateway.service import Gateway  # noqa: E402
from orchestrator.services import Services  # noqa: E402
from orchestrator.testing.fake_upstream import FakeUpstream  # noqa: E402

KEY_ENV = "FLT_TEST_GATEWAY_KEY"
SECRET_KEY = "sk-flt-test-secret-0123456789"
FAST_RETRY = RetryPolicy(attempts=3, base_delay_s=0.01, max_delay_s=0.05, max_retry_after_s=1.0)


class Clock:
    """A settable clock for budget windows."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Orchestrator:
    services: Services
    gateway: Gateway
    url: str
    tokens: dict[str, str]
    upstream: FakeUpstream
    clock: Clock
    _clients: list[Any] = field(default_factory=list)

    def client(self, agent: str, **kwargs: Any) -> openai.OpenAI:
        """The official OpenAI client, authenticated as `agent`, without client-side retries."""
        client = openai.OpenAI(base_url=self.url + "/v1", api_key=self.tokens[agent], max_retries=0, **kwargs)
        self._clients.append(client)
        return client

    def http(self, token: str | None = None) -> httpx.Client:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        client = httpx.Client(base_url=self.url, headers=headers, timeout=30)
        self._clients.append(client)
        return client

    def close(self) -> None:
        for client in self._clients:
            client.close()


def fleet_yaml(upstream_url: str, body: str) -> str:
    head = f"""\
    version: 1
    fleet: gwtest
    llm:
      default_model: test
      providers:
        fake:
          base_url: {upstream_url}
          api_key_env: {KEY_ENV}
          timeout_s: 20
        nokey:
          base_url: {upstream_url}
          api_key_env: FLT_TEST_UNSET_KEY_VARIABLE
    """
    return textwrap.dedent(head) + textwrap.dedent(body)


Launch = Callable[..., Orchestrator]

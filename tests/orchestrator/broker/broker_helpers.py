"""Helpers shared by the broker tests: a small fleet with contracts, its services, ask and serve."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_runtime.protocol import AskRequest, AskResult, InboxItem, WorkResult
from orchestrator.backends.process import ProcessBackend
from orchestrator.config.loader import load_fleet
from orchestrator.services import Services
from orchestrator.state.paths import StatePaths
from orchestrator.wiring import attach_subsystems, core_services, fleet_manager

SUMMARIZE = """\
---
operations:
  - name: summarize
    description: Summarize a text.
    input:
      type: object
      properties: {text: {type: string, minLength: 1}}
      required: [text]
      additionalProperties: false
    output:
      type: object
      properties: {summary: {type: string}}
      required: [summary]
---
I summarize texts.
"""

RELAY = """\
---
operations:
  - name: relay
    description: Pass a question on.
    input:
      type: object
      properties: {to: {type: string}}
"""
RELAY += "---\nI relay questions.\n"

FLEET_YAML = """\
version: 1
fleet: brokertest
agents:
  alpha:
    role: asks things
    talks_to: [beta, gamma]
    interface: relay.md
  beta:
    role: summarizer
    talks_to: [alpha, gamma]
    interface: summarize.md
  gamma:
    role: relay
    talks_to: [alpha, delta]
    interface: relay.md
  delta:
    role: relay
    talks_to: [echo]
    interface: relay.md
  echo:
    role: relay
    talks_to: [alpha]
    interface: relay.md
  loner:
    role: talks to nobody
"""


def write_fleet(root: Path, fleet_yaml: str = FLEET_YAML) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "summarize.md").write_text(SUMMARIZE)
    (root / "relay.md").write_text(RELAY)
    path = root / "fleet.yaml"
    path.write_text(textwrap.dedent(fleet_yaml))
    return path


def build_services(fleet_file: Path) -> Services:
    fleet = load_fleet(fleet_file)
    paths = StatePaths.for_fleet_file(fleet_file)
    core = core_services(fleet, ProcessBackend(paths.root), paths)
    core.operator_token = core.tokens.mint_operator()
    return attach_subsystems(core, fleet_manager(core))


Responder = Callable[[InboxItem], WorkResult]
SUMMARIZE_INPUT = {"text": "hello world"}


async def serve_one(services: Services, agent: str, respond: Responder, wait_s: float = 5.0) -> InboxItem:
    item = await services.inbox.next(agent, wait_s)
    assert item is not None, f"{agent} received nothing"
    services.inbox.complete(agent, item.id, respond(item))
    return item


def summary_of(item: InboxItem) -> WorkResult:
    assert item.input is not None
    return WorkResult(output={"summary": item.input["text"][:5]})


def ask(services: Services, sender: str, serve: Responder | None = None, **request: Any) -> AskResult:
    async def scenario() -> AskResult:
        call = services.broker.ask(sender, AskRequest(**request))
        if serve is None:
            return await call
        result, _ = await asyncio.gather(call, serve_one(services, request["to"], serve))
        return result

    return asyncio.run(scenario())


def delivered(services: Services, agent: str) -> list[InboxItem]:
    return services.inbox.list(agent, include_done=True)

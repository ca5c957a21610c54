"""A small fleet with contracts, real SQLite state, and a broker wired over it."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from orchestrator.auth import OPERATOR, TokenStore  # noqa: E402
from orchestrator.backends.process import ProcessBackend  # noqa: E402
from orchestrator.broker.broker import Broker  # noqa: E402
from orchestrator.broker.inbox import Inbox  # noqa: E402
from orchestrator.config.loader import load_fleet  # noqa: E402
from orchestrator.events import EventBus  # noqa: E402
from orchestrator.services import Services  # noqa: E402
from orchestrator.state.db import Database  # noqa: E402
from orchestrator.state.paths import StatePaths  # noqa: E402

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
    paths.ensure()
    db = Database(paths.db)
    events = EventBus(db)
    tokens = TokenStore(db)
    services = Services(
        fleet=fleet,
        paths=paths,
        db=db,
        events=events,
        tokens=tokens,
        backend=ProcessBackend(paths.root),
    )
    services.operator_token = tokens.mint(OPERATOR)
    services.inbox = Inbox(services)
    services.broker = Broker(services)
    return services


@pytest.fixture
def fleet_file(tmp_path: Path) -> Path:
    return write_fleet(tmp_path / "fleet")


@pytest.fixture
def services(fleet_file: Path) -> Iterator[Services]:
    built = build_services(fleet_file)
    yield built
    built.db.close()

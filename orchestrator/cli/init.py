"""`flotilla init [DIR]`: a commented starter fleet with one agent, an interface and a heartbeat rule."""

from __future__ import annotations

import json
from pathlib import Path

import click

from orchestrator.config.fleet import ConfigError
from orchestrator.config.loader import load_fleet
from orchestrator.config.schema import EDITOR_MODELINE, SCHEMA_FILE_NAME, fleet_schema

STARTER_FLEET = """\
{modeline}
# A fleet of one agent. Every field is described in fleet.schema.json (`flotilla schema`); the
# line above points editors that use yaml-language-server at it, for completion and help.
version: 1
fleet: {fleet}                 # a DNS label: lowercase letters, digits and '-'

defaults:
  model: test                  # the built-in deterministic test model: offline, no key, not an LLM
  resources: {{ memory: 128m, cpus: 0.5, pids: 64, disk: 256m }}
  budget: {{ daily_usd: 1.00 }}  # the gateway refuses calls past it

llm:
  providers: {{}}
  # To use a real model, declare an OpenAI-compatible provider (the key stays on this host)
  # and set `model: openai:gpt-4o-mini` above or on one agent:
  #   openai: {{ base_url: "https://api.openai.com/v1", api_key_env: OPENAI_API_KEY }}
  # Memory's embedding model, unset here: the test model's vectors while every agent uses the
  # test model, e5-minilm (multilingual-e5-small and all-MiniLM-L6-v2: local, offline, no key)
  # once one uses a real model.
  # To choose: `embedding: {{ model: openai:text-embedding-3-small }}`, or `model: null` for
  # keyword-only memory.

agents:
  assistant:
    role: a helpful assistant that keeps notes for the operator
    soul: You are brief, friendly and precise. You say when you are unsure.
    instructions: |
      - Answer the operator's questions; save durable facts with memory_save.
      - Answer the `summarise` operation with a short summary of the text you are given.
    user: The operator runs this fleet from a terminal.
    interface: interfaces/assistant.md
    heartbeat:
      every: 15m               # ticks cost nothing while there is nothing to do
      rules:
        - "daily 09:00: tidy MEMORY.md and drop what is no longer true"
"""

STARTER_INTERFACE = """\
---
operations:
  - name: summarise
    description: Summarise a text in a few sentences.
    input:
      type: object
      properties:
        text: { type: string, minLength: 1 }
      required: [text]
    output:
      type: object
      properties:
        summary: { type: string }
      required: [summary]
---
Send the whole text to summarise; the summary comes back in plain sentences.
"""


def _fleet_name(folder: Path) -> str:
    cleaned = "".join(c if c.isalnum() else "-" for c in folder.resolve().name.lower()).strip("-")
    return cleaned[:40].strip("-") or "my-fleet"


@click.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), default=Path("."))
@click.option("--name", default=None, help="The fleet's name (default: from the folder's name).")
@click.option("--force", is_flag=True, help="Overwrite an existing fleet.yaml and interface.")
def init(directory: Path, name: str | None, force: bool) -> None:
    """Write a commented starter fleet.yaml (one agent, an interface, a heartbeat rule) into DIRECTORY.

    \b
    Then:  flotilla validate && flotilla up
    """
    fleet_file = directory / "fleet.yaml"
    interface = directory / "interfaces" / "assistant.md"
    existing = [p for p in (fleet_file, interface) if p.exists()]
    if existing and not force:
        raise click.UsageError(f"{existing[0]} exists; nothing was written (use --force to overwrite)")
    directory.mkdir(parents=True, exist_ok=True)
    interface.parent.mkdir(exist_ok=True)
    starter = STARTER_FLEET.format(fleet=name or _fleet_name(directory), modeline=EDITOR_MODELINE)
    fleet_file.write_text(starter, encoding="utf-8")
    interface.write_text(STARTER_INTERFACE, encoding="utf-8")
    schema_file = directory / SCHEMA_FILE_NAME
    schema_file.write_text(json.dumps(fleet_schema(), indent=2) + "\n", encoding="utf-8")
    # Imported here: the checks' packages load only for a command that reads fleet.yaml.
    from orchestrator.fleet.validation import register_fleet_checks

    register_fleet_checks()
    try:
        load_fleet(fleet_file)
    except ConfigError as exc:
        raise click.UsageError(f"the starter fleet does not validate: {exc}") from None
    click.echo(f"wrote {fleet_file}, {interface} and {schema_file}")
    here = directory.resolve() == Path.cwd().resolve()
    click.echo(f"next: {'' if here else f'cd {directory} && '}flotilla validate && flotilla up")

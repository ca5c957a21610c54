"""fleet.yaml `context`: the strategy per agent (default compact), its jobs' triggers, schedules
and models, carried to the agent in its runtime config."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agent_runtime.protocol import ContextStrategy
from orchestrator.config.fleet import ConfigError
from orchestrator.config.loader import load_fleet
from orchestrator.config.models import DEFAULT_EMBEDDING_MODEL, FleetConfig
from orchestrator.config.settings import container_hash
from orchestrator.running_agents.session import runtime_config

FLEET = """\
version: 1
fleet: demo
agents:
  alpha:
    role: first
  beta:
    role: second
    context:
      strategy: checkpoint
      replay_turns: 40
      jobs:
        consolidation: {after_turns: 4, at: ["04:30"], model: "openai:gpt-4o-mini"}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_compact_is_the_default_and_checkpoint_is_carried_to_the_agent(tmp_path: Path) -> None:
    fleet = load_fleet(_write(tmp_path, FLEET), contracts=False)
    assert runtime_config(fleet, "alpha").context.strategy == ContextStrategy.COMPACT
    beta = runtime_config(fleet, "beta").context
    assert beta.strategy == ContextStrategy.CHECKPOINT and beta.replay_turns == 40
    assert beta.jobs.consolidation.after_turns == 4 and beta.jobs.consolidation.at == ["04:30"]
    # Defaults from the design: review 8 turns or 03:00 and 15:00; extraction 12 or 05:00.
    assert beta.jobs.review.after_turns == 8 and beta.jobs.review.at == ["03:00", "15:00"]
    assert beta.jobs.extraction.after_turns == 12 and beta.jobs.extraction.at == ["05:00"]
    # A job's own model may be called through the gateway.
    assert "openai:gpt-4o-mini" in fleet.config.allowed_models("beta")


def test_changing_the_strategy_recreates_the_agent(tmp_path: Path) -> None:
    before = load_fleet(_write(tmp_path, FLEET), contracts=False)
    after = load_fleet(
        _write(tmp_path, FLEET.replace("strategy: checkpoint", "strategy: compact")), contracts=False
    )
    assert container_hash(before, "beta") != container_hash(after, "beta")
    assert container_hash(before, "alpha") == container_hash(after, "alpha")


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ("strategy: checkpoint", "strategy: summarize", "agents.beta.context.strategy"),
        ('at: ["04:30"]', 'at: ["4pm"]', "agents.beta.context.jobs.consolidation.at"),
        ("after_turns: 4", "after_turns: 0", "agents.beta.context.jobs.consolidation.after_turns"),
    ],
)
def test_bad_context_settings_are_refused_with_their_path(
    tmp_path: Path, old: str, new: str, where: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_fleet(_write(tmp_path, FLEET.replace(old, new)), contracts=False)
    assert any(where in str(problem) for problem in info.value.problems), info.value.problems


def test_the_chat_models_kept_by_a_config_follow_a_copy_that_changes_its_agents() -> None:
    config = FleetConfig.model_validate({"fleet": "f", "agents": {"a": {"role": "r"}}})
    assert config.embedding_model() == "test" and config.chat_models == {"test"}
    agents = {"a": config.agents["a"].model_copy(update={"model": "gpt-4o-mini"})}
    changed = config.model_copy(update={"agents": agents})
    assert changed.chat_models == {"gpt-4o-mini"} and changed.embedding_model() == DEFAULT_EMBEDDING_MODEL
    assert config.chat_models == {"test"}

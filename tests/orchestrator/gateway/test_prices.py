"""Prices from the genai-prices library (bundled data, offline), fleet.yaml overrides, and the
validation that refuses a dollar budget nothing could ever charge."""

from __future__ import annotations

import socket
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import cli
from orchestrator.config.fleet import ConfigError
from orchestrator.config.loader import load_fleet
from orchestrator.config.models import LLMConfig, ModelInfo, ProviderConfig
from orchestrator.gateway.prices import UNPRICED, library_price, price_of

LLM = LLMConfig(
    providers={
        "openai": ProviderConfig(base_url="https://api.openai.com/v1"),
        "router": ProviderConfig(base_url="https://openrouter.ai/api/v1"),
        "local": ProviderConfig(base_url="http://127.0.0.1:8080/v1"),
    },
    models={"local:priced": ModelInfo(input_per_mtok=0, output_per_mtok=0)},
)


def test_library_prices_by_the_providers_url_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("a price lookup opened a socket")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    library_price.cache_clear()
    mini = price_of("openai:gpt-4o-mini-2024-07-18", LLM)  # a dated variant of a known model
    assert mini.known and mini.input_per_mtok > 0 and mini.output_per_mtok > mini.input_per_mtok
    assert mini.cached_input_per_mtok is not None and mini.cached_input_per_mtok < mini.input_per_mtok
    assert price_of("router:meta-llama/llama-3.1-70b-instruct", LLM).known
    assert price_of("openai:text-embedding-3-small", LLM).output_per_mtok == 0


def test_a_local_server_is_never_priced_by_a_guess_at_another_provider() -> None:
    assert price_of("local:gpt-4o", LLM) == UNPRICED
    assert price_of("local:priced", LLM).known


def test_fleet_yaml_overrides_the_library_field_by_field() -> None:
    llm = LLM.model_copy(update={"models": {"openai:gpt-4o": ModelInfo(output_per_mtok=1.0)}})
    library = price_of("openai:gpt-4o", LLM)
    mixed = price_of("openai:gpt-4o", llm)
    assert (mixed.input_per_mtok, mixed.output_per_mtok) == (library.input_per_mtok, 1.0)


FLEET = """\
version: 1
fleet: priced
llm:
  providers:
    local: {{base_url: "http://127.0.0.1:8080/v1"}}
{models}
agents:
  alpha:
    model: local:smollm2
    budget: {{{budget}}}
"""


def _write(tmp_path: Path, budget: str, models: str = "") -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEET.format(budget=budget, models=textwrap.indent(models, "  ")))
    return path


def test_a_dollar_budget_on_an_unpriced_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_fleet(_write(tmp_path, "daily_usd: 5"))
    text = str(caught.value)
    assert "model 'local:smollm2' has no known price" in text and "agents.alpha.budget" in text
    result = CliRunner().invoke(cli, ["validate", "--file", str(tmp_path / "fleet.yaml")])
    assert result.exit_code == 2 and "no known price" in result.output


def test_a_price_or_a_token_budget_makes_it_valid(tmp_path: Path) -> None:
    models = "models:\n  local:smollm2: {input_per_mtok: 0, output_per_mtok: 0}\n"
    assert load_fleet(_write(tmp_path, "daily_usd: 5", models)).config.agents["alpha"]
    assert load_fleet(_write(tmp_path, "daily_tokens: 5000")).config.agents["alpha"]

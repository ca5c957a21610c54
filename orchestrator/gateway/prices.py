"""Model prices in USD per million tokens: the `genai-prices` library's data, overridden by fleet.yaml.

The library's bundled snapshot is used as installed: nothing is fetched at run time (its
auto-update is never started). A model is looked up at its provider, recognised by the
provider's `base_url` (api.openai.com, openrouter.ai, ...) or, failing that, by the name the
fleet gives the provider (`openai`, `anthropic`, ...). A model is never priced by a guess at
another provider: a local server (Ollama, vLLM, llama.cpp on 127.0.0.1) is not in the library,
so its models are unpriced until fleet.yaml gives them a price (0 for free ones).

`fleet.llm.models["provider:model"]` may set `input_per_mtok`, `output_per_mtok` and
`cached_input_per_mtok`; each field it sets wins over the library's value. A dollar budget on a
model with no known price is a configuration error (`unpriced_budget_problems`): it would never
cap anything.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from agent_runtime.memory import BLENDED_EMBEDDING_MODEL, LOCAL_EMBEDDING_MODEL, MULTILINGUAL_EMBEDDING_MODEL
from orchestrator.config.models import TEST_MODEL, BudgetConfig, FleetConfig, LLMConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Price:
    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0
    cached_input_per_mtok: float | None = None
    known: bool = True

    def cost(self, tokens_in: int, tokens_out: int, cached_tokens: int = 0) -> float:
        cached = min(max(cached_tokens, 0), tokens_in)
        cached_rate = (
            self.input_per_mtok if self.cached_input_per_mtok is None else self.cached_input_per_mtok
        )
        dollars = (
            (tokens_in - cached) * self.input_per_mtok
            + cached * cached_rate
            + tokens_out * self.output_per_mtok
        )
        return dollars / 1_000_000


# The nominal price of the built-in test model, so that dollar budgets can be exercised offline.
TEST_PRICE = Price(1.0, 1.0, 1.0)
# The built-in local embedding model runs in the orchestrator: it costs no dollars.
LOCAL_PRICE = Price(0.0, 0.0, 0.0)
UNPRICED = Price(known=False)


def _per_mtok(value: Any) -> float | None:
    """A library price field: a Decimal, tiered prices (their base rate) or nothing."""
    if value is None:
        return None
    if isinstance(value, Decimal | int | float):
        return float(value)
    base = getattr(value, "base", None)
    return float(base) if base is not None else None


@functools.lru_cache(maxsize=512)
def library_price(upstream_model: str, provider: str, base_url: str | None) -> Price:
    """The library's current price of `upstream_model` at this provider, or UNPRICED."""
    try:
        from genai_prices import data_snapshot
    except ImportError:
        log.warning("genai-prices is not installed: models without a price in fleet.yaml cost $0")
        return UNPRICED
    snapshot = data_snapshot.get_snapshot()
    lookups: list[dict[str, str | None]] = [{"provider_id": provider, "provider_api_url": None}]
    if base_url:
        lookups.insert(0, {"provider_id": None, "provider_api_url": base_url})
    for lookup in lookups:
        try:
            _, info = snapshot.find_provider_model(
                upstream_model, None, lookup["provider_id"], lookup["provider_api_url"]
            )
        except LookupError:
            continue
        prices = info.get_prices(datetime.now(UTC))
        input_rate = _per_mtok(getattr(prices, "input_mtok", None))
        output_rate = _per_mtok(getattr(prices, "output_mtok", None))
        if input_rate is None and output_rate is None:
            continue
        return Price(
            input_per_mtok=input_rate or 0.0,
            output_per_mtok=output_rate or 0.0,
            cached_input_per_mtok=_per_mtok(getattr(prices, "cache_read_mtok", None)),
        )
    return UNPRICED


def builtin_price(model: str, llm: LLMConfig) -> Price:
    """The price before fleet.yaml's overrides: the test model's, or the library's."""
    if model == TEST_MODEL:
        return TEST_PRICE
    if model in (LOCAL_EMBEDDING_MODEL, MULTILINGUAL_EMBEDDING_MODEL, BLENDED_EMBEDDING_MODEL):
        return LOCAL_PRICE
    provider, _, upstream_model = model.partition(":")
    if not upstream_model:
        return UNPRICED
    config = llm.providers.get(provider)
    return library_price(upstream_model, provider, config.base_url if config else None)


def price_of(model: str, llm: LLMConfig) -> Price:
    """The price of a fleet model: fleet.yaml's figures over the library's."""
    base = builtin_price(model, llm)
    info = llm.models.get(model)
    if info is None:
        return base
    return Price(
        input_per_mtok=base.input_per_mtok if info.input_per_mtok is None else info.input_per_mtok,
        output_per_mtok=base.output_per_mtok if info.output_per_mtok is None else info.output_per_mtok,
        cached_input_per_mtok=(
            base.cached_input_per_mtok if info.cached_input_per_mtok is None else info.cached_input_per_mtok
        ),
        known=base.known or info.input_per_mtok is not None or info.output_per_mtok is not None,
    )


def _has_dollar_cap(budget: BudgetConfig) -> bool:
    return budget.daily_usd is not None or budget.monthly_usd is not None


def unpriced_budget_problems(config: FleetConfig) -> list[tuple[tuple[str, ...], str]]:
    """(field path, message) for each dollar budget that covers a model with no known price."""
    fleet_capped = _has_dollar_cap(config.budget)
    problems: list[tuple[tuple[str, ...], str]] = []
    embedding_model = config.embedding_model()
    for name in config.agents:
        agent_capped = _has_dollar_cap(config.budget_of(name))
        if not (agent_capped or fleet_capped):
            continue
        models = [*config.allowed_models(name), *([embedding_model] if embedding_model else [])]
        for model in dict.fromkeys(models):
            if price_of(model, config.llm).known:
                continue
            where = ("agents", name, "budget") if agent_capped else ("budget",)
            problems.append(
                (
                    where,
                    f"a dollar budget covers agent {name!r}, but model {model!r} has no known price: "
                    f"give it one under llm.models.{model!r} (input_per_mtok, output_per_mtok; 0 for "
                    "a free local model) or cap it in tokens instead",
                )
            )
    return problems

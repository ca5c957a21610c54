"""Model prices in USD per million tokens: a small built-in table, overridden by fleet.yaml.

`fleet.llm.models["provider:model"]` may set `input_per_mtok`, `output_per_mtok` and
`cached_input_per_mtok`; each field it sets wins over the built-in value. A model found in
neither costs nothing (local models), so only token budgets can cap it.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.config.models import TEST_MODEL, LLMConfig


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

# Public list prices of well-known models (USD per million tokens), matched by the upstream
# model name or its longest known prefix (dated variants share their family's price).
BUILTIN_PRICES: dict[str, Price] = {
    "gpt-4o": Price(2.50, 10.00, 1.25),
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "gpt-4.1": Price(2.00, 8.00, 0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025),
    "o3-mini": Price(1.10, 4.40, 0.55),
    "o4-mini": Price(1.10, 4.40, 0.275),
    "text-embedding-3-small": Price(0.02, 0.0),
    "text-embedding-3-large": Price(0.13, 0.0),
    "claude-3-5-haiku": Price(0.80, 4.00, 0.08),
    "claude-sonnet-4": Price(3.00, 15.00, 0.30),
    "claude-3-7-sonnet": Price(3.00, 15.00, 0.30),
}

UNPRICED = Price(known=False)


def upstream_name(model: str) -> str:
    """'openai:gpt-4o-mini' -> 'gpt-4o-mini'; 'openrouter:openai/gpt-4o' -> 'gpt-4o'."""
    name = model.split(":", 1)[1] if ":" in model else model
    return name.rsplit("/", 1)[-1]


def builtin_price(model: str) -> Price:
    if model == TEST_MODEL:
        return TEST_PRICE
    name = upstream_name(model).lower()
    matches = [key for key in BUILTIN_PRICES if name == key or name.startswith(key + "-")]
    return BUILTIN_PRICES[max(matches, key=len)] if matches else UNPRICED


def price_of(model: str, llm: LLMConfig) -> Price:
    """The price of a fleet model: fleet.yaml's figures over the built-in table."""
    base = builtin_price(model)
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

"""Which embedding model and vector size the agents of a fleet use.

The model comes from `FleetConfig.embedding_model()`: fleet.yaml's `llm.embedding.model`, or the
`test` model in a fleet that uses nothing else, or multilingual-e5-small, or none when its
package is missing (memory searches by keyword only). The size is sent to the model only when
fleet.yaml sets `llm.embedding.dimensions`: many embedding servers refuse the parameter, and a
model answers in its own size without it.
"""

from __future__ import annotations

from orchestrator.config.models import TEST_MODEL, FleetConfig

# The size of the test model's vectors when fleet.yaml sets none.
TEST_EMBEDDING_DIMENSIONS = 1536


def embedding_dimensions(config: FleetConfig) -> int | None:
    """The vector size agents ask for: fleet.yaml's, the test model's default, or None (the
    model's own size, which the agent learns from its first answer)."""
    if config.llm.embedding.dimensions is not None:
        return config.llm.embedding.dimensions
    return TEST_EMBEDDING_DIMENSIONS if config.embedding_model() == TEST_MODEL else None

"""Model providers: one module per kind of upstream, all behind the small `Provider` interface."""

from orchestrator.gateway.providers.base import Provider, UpstreamError

__all__ = ["Provider", "UpstreamError"]

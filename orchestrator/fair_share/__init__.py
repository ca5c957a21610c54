"""Each agent's fair share of what agents share: rates and quotas on what an agent sends
(`limiter`), and retention of what the orchestrator stores for it (`retention`).

It owns no table: retention asks each table's owner to prune its own rows. It imports the
configuration, the event bus and the owners it prunes, never the HTTP layer.
"""

from orchestrator.fair_share.limiter import FairShare, LimitState
from orchestrator.fair_share.retention import Retention, RetentionReport

__all__ = ["FairShare", "LimitState", "Retention", "RetentionReport"]

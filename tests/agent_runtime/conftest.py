"""Shared fixtures for the agent runtime tests."""

from __future__ import annotations

import sys
from pathlib import Path

# The package is used from the checkout, not installed: make `import agent_runtime` work.
REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

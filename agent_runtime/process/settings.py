"""Process settings of an agent, from its environment and its data folder.

The bearer token is never taken from the environment: the orchestrator hands the agent a
read-only file (`FLOTILLA_BEARER_FILE`; in a container `/run/flotilla/token`), which it may
rewrite to rotate the token without restarting the agent. The agent's data folder is its own:
the orchestrator never writes into it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DATA_DIR = "/data"
# After this long without work, an agent that loaded its worker restarts itself in place
# (same pid) to give back the worker's memory; 0 keeps the worker loaded. Short: loading the
# worker again costs about a second of CPU on the next item, keeping it costs about 30 MiB for
# as long as the agent idles.
DEFAULT_IDLE_RELEASE_S = 30.0


class SettingsError(ValueError):
    """A required setting is missing or malformed; the message names it."""


@dataclass(frozen=True)
class Settings:
    orchestrator_url: str
    agent: str
    data_dir: Path
    idle_release_s: float = DEFAULT_IDLE_RELEASE_S
    token_path: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        values = os.environ if env is None else env
        url = values.get("FLOTILLA_URL", "").strip().rstrip("/")
        agent = values.get("FLOTILLA_AGENT", "").strip()
        if not url.startswith(("http://", "https://")):
            raise SettingsError(
                f"FLOTILLA_URL must be the orchestrator's http(s) URL, got {url or 'nothing'!r}"
            )
        if not agent:
            raise SettingsError("FLOTILLA_AGENT must name this agent")
        data = Path(values.get("FLOTILLA_DATA", "").strip() or DEFAULT_DATA_DIR)
        raw_release = values.get("FLOTILLA_IDLE_RELEASE_S", "").strip()
        try:
            release = float(raw_release) if raw_release else DEFAULT_IDLE_RELEASE_S
        except ValueError:
            raise SettingsError(
                f"FLOTILLA_IDLE_RELEASE_S must be a number of seconds, got {raw_release!r}"
            ) from None
        token = values.get("FLOTILLA_BEARER_FILE", "").strip()
        return cls(
            orchestrator_url=url,
            agent=agent,
            data_dir=data,
            idle_release_s=max(release, 0.0),
            token_path=Path(token) if token else None,
        )

    @property
    def runtime_dir(self) -> Path:
        return self.data_dir / ".runtime"

    @property
    def token_file(self) -> Path:
        return self.token_path or self.runtime_dir / "token"

    @property
    def alive_file(self) -> Path:
        return self.runtime_dir / "alive"


def read_token(path: Path) -> str:
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise SettingsError(
            f"no token at {path}: the orchestrator hands it over before starting the agent"
        ) from None
    if not token:
        raise SettingsError(f"the token file {path} is empty")
    return token

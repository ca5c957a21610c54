"""Restored agents' own files handed to them over their links, for runtimes whose storage
the orchestrator cannot fill through an engine on this machine (swarm volumes on any node).

`flotilla restore` leaves each agent's own files in `.flotilla/restore/AGENT/`. On such a
runtime the agent is held paused from the moment the orchestrator starts (so it claims no inbox
item on its empty storage), its unit starts on fresh storage, and once its link opens it is
handed the files (orchestrator.backup.push); after its restart on them the folder goes and the
hold is lifted. A hold the operator had put on the agent is left as it was. If the orchestrator
stops half-way, the folder and the marker of the hold stay, and the next start hands them again.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestrator.backup.push import answers_after_restart, push_snapshot
from orchestrator.backup.restore import RESTORE_FOLDER, pending_restores
from orchestrator.backup.snapshot import AskAgent, SnapshotFailed
from orchestrator.lifecycle import Controls
from orchestrator.running_agents.requests import AgentLinks
from orchestrator.state.paths import StatePaths

log = logging.getLogger(__name__)

AGENT_RESTORED = "agent.restored"
AGENT_RESTORE_FAILED = "agent.restore_failed"
RESTART_WAIT_S = 120.0
RETRY_S = 30.0


def _held_marker(paths: StatePaths, agent: str) -> Path:
    return paths.root / RESTORE_FOLDER / f"{agent}.held"


def hold_for_restore(paths: StatePaths, controls: Controls, agents: list[str] | tuple[str, ...]) -> list[str]:
    """Pause the agents whose own files wait for them (unless the operator holds them already);
    the agents held."""
    held = []
    for agent in pending_restores(paths, agents):
        marker = _held_marker(paths, agent)
        if controls.own_hold(agent) is None:
            marker.touch()
            controls.set(agent, "paused")
        if marker.exists():
            held.append(agent)
    return held


class LinkRestores:
    """Hands every waiting restore to its agent once its link opens."""

    def __init__(
        self,
        paths: StatePaths,
        agents: Callable[[], tuple[str, ...]],
        ask: AskAgent,
        links: AgentLinks,
        controls: Controls,
        publish: Callable[..., Any],
    ) -> None:
        self._paths = paths
        self._agents = agents
        self._ask = ask
        self._links = links
        self._controls = controls
        self._publish = publish

    async def run(self) -> None:
        """Until every waiting restore is handed over (at once when there is none)."""
        waiting = pending_restores(self._paths, self._agents())
        await asyncio.gather(*(self._restore(agent, folder) for agent, folder in waiting.items()))

    async def _restore(self, agent: str, folder: Path) -> None:
        while True:
            await self._links.wait_open(agent, RETRY_S)
            if not self._links.is_open(agent):
                continue
            started = time.monotonic()
            try:
                applied = await push_snapshot(self._ask, agent, folder)
                await answers_after_restart(self._ask, self._links, agent, RESTART_WAIT_S)
            except SnapshotFailed as failed:
                log.warning("restoring agent %s over its link failed: %s", agent, failed)
                self._publish(AGENT_RESTORE_FAILED, agent=agent, problem=str(failed))
                await asyncio.sleep(RETRY_S)
                continue
            break
        shutil.rmtree(folder, ignore_errors=True)
        marker = _held_marker(self._paths, agent)
        if marker.exists():
            self._controls.set(agent, None)
            marker.unlink()
        self._publish(
            AGENT_RESTORED,
            agent=agent,
            files=applied.files,
            bytes=applied.bytes,
            seconds=round(time.monotonic() - started, 2),
        )

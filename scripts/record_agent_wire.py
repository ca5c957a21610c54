"""Record what an agent runtime sends the orchestrator, and the reply shapes it accepts.

Run with the agent runtime of a release on the path, for example from a checkout of it:

    PYTHONPATH=/path/to/release python scripts/record_agent_wire.py > tests/fixtures/agent-wire/NAME.json

The requests are built the way that runtime builds them: boot's first config and check-in (plain
HTTP, standard library), the channel frames of its client, and the HTTP calls it still makes.
The replies are recorded as the JSON Schemas of that runtime's wire models: they refuse unknown
fields, so a newer orchestrator's reply must fit them exactly. `{item}` in a frame stands for the
id of the inbox item the replay has claimed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

import agent_runtime
from agent_runtime import protocol as wire

ITEM = "{item}"
WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _frame(frame: wire.ChannelFrame, frame_id: int) -> str:
    """The frame's text as the runtime's channel sends it: its id set, then `model_dump_json`."""
    return frame.model_copy(update={"id": frame_id}).model_dump_json()


def frames() -> dict[str, str]:
    checkin = wire.CheckIn(state="idle", pid=7, uptime_s=3.5, turns=1, memory_mode="keyword")
    return {
        "config": _frame(wire.ChannelConfig(), 1),
        "config_reload": _frame(wire.ChannelConfig(reload=True), 2),
        "checkin": _frame(wire.ChannelCheckIn(checkin=checkin), 3),
        "next": _frame(wire.ChannelNext(wait_s=5), 4),
        "progress": _frame(wire.ChannelProgress(item_id=ITEM, delta="hal"), 5),
        "done": _frame(wire.ChannelDone(item_id=ITEM, result=wire.WorkResult(ok=True, text="hello")), 6),
        "answer_ask": _frame(
            wire.ChannelDone(
                item_id=ITEM, result=wire.WorkResult(ok=True, text="hi", output={"greeting": "hi alpha"})
            ),
            11,
        ),
        "ask": _frame(
            wire.ChannelAsk(
                request=wire.AskRequest(to="beta", operation="greet", input={"who": "alpha"}, timeout_s=20)
            ),
            7,
        ),
        "tell": _frame(wire.ChannelTell(request=wire.TellRequest(to="beta", text="fyi")), 8),
        "workspace_write": _frame(
            wire.ChannelWorkspaceWrite(
                name="MEMORY.md",
                write=wire.WorkspaceWrite(content="# Memory\n", author="agent", reason="note"),
            ),
            9,
        ),
        "forgotten": _frame(wire.ChannelForgotten(texts=["an old fact"]), 10),
    }


def http_requests() -> dict[str, dict[str, Any]]:
    prefix = wire.AGENT_API_PREFIX
    run = wire.RunRecord(
        id="run-1", agent="alpha", trigger="operator", started_at=WHEN, finished_at=WHEN, outcome="ok"
    )
    event = wire.AgentEvent(type="compaction.done", data={"turns": 3})
    # boot builds its first check-in by hand, with the standard library (four fields).
    first_checkin = {"state": "starting", "pid": 7, "uptime_s": 0.2, "turns": 0}
    return {
        "boot_config": {"method": "GET", "path": f"{prefix}/config", "body": None},
        "boot_checkin": {"method": "POST", "path": f"{prefix}/checkin", "body": json.dumps(first_checkin)},
        "runs": {"method": "POST", "path": f"{prefix}/runs", "body": run.model_dump_json()},
        "events": {"method": "POST", "path": f"{prefix}/events", "body": event.model_dump_json()},
        "peers": {"method": "GET", "path": f"{prefix}/peers", "body": None},
        "tools": {"method": "GET", "path": f"{prefix}/tools", "body": None},
    }


REPLIES: dict[str, Any] = {
    "AgentRuntimeConfig": wire.AgentRuntimeConfig,
    "CheckInReply": wire.CheckInReply,
    "InboxItem": wire.InboxItem,
    "AskResult": wire.AskResult,
    "TellResult": wire.TellResult,
    "WorkspaceWriteResult": wire.WorkspaceWriteResult,
    "ForgottenCopies": wire.ForgottenCopies,
    "PeerList": list[wire.PeerInfo],
    "OrchestratorTools": wire.OrchestratorTools,
    "ErrorBody": wire.ErrorBody,
    # What the orchestrator itself sends down the channel (the workspace when it opens).
    "AgentRequest": wire.AgentRequest,
}


def schema(model: Any) -> dict[str, Any]:
    if isinstance(model, type) and issubclass(model, BaseModel):
        return model.model_json_schema(mode="validation")
    return TypeAdapter(model).json_schema(mode="validation")


def source() -> str:
    root = Path(agent_runtime.__file__).resolve().parent.parent
    commit = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return commit or "unknown"


def main() -> None:
    recording = {
        "recorded_from": source(),
        "protocol": wire.PROTOCOL_VERSION,
        "frames": frames(),
        "http": http_requests(),
        "replies": {name: schema(model) for name, model in REPLIES.items()},
    }
    json.dump(recording, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

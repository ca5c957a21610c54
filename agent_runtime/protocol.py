"""Wire models shared by the agent runtime and the orchestrator.

Everything that crosses the HTTP boundary between an agent and the orchestrator is one of
these models. The orchestrator imports them from here; this package never imports the
orchestrator.

Agent-facing routes (all under the orchestrator's base URL, bearer = the agent's token):

    GET  /agent/v1/config                 -> AgentRuntimeConfig
    POST /agent/v1/checkin                CheckIn -> CheckInReply
    GET  /agent/v1/inbox/next?wait=S      -> InboxItem (200) | nothing yet (204)
    POST /agent/v1/inbox/{item_id}/progress  ReplyChunk   (streamed text for the operator)
    POST /agent/v1/inbox/{item_id}/done   WorkResult
    POST /agent/v1/runs                   RunRecord
    POST /agent/v1/events                 AgentEvent
    GET  /agent/v1/peers                  -> list[PeerInfo]
    POST /agent/v1/ask                    AskRequest -> AskResult
    POST /agent/v1/tell                   TellRequest -> TellResult
    GET  /agent/v1/tools                  -> OrchestratorTools (tools of HTTP MCP servers)
    POST /agent/v1/tools/call             OrchestratorToolCall -> OrchestratorToolResult
    POST /agent/v1/approvals              ApprovalRequest -> ApprovalItem (same key: same item)
    GET  /agent/v1/approvals/{id}?wait=S  -> ApprovalItem (long-poll until decided or S elapsed)
    POST /v1/chat/completions             OpenAI-compatible (LLM gateway)
    POST /v1/embeddings                   OpenAI-compatible (LLM gateway)
    POST /v1/tokens/count                 TokenCountRequest -> TokenCountResult
    WS   /agent/v1/channel                ChannelRequest frames -> ChannelReply frames

The channel carries what every agent does all the time (check-ins, config reloads, inbox, ask,
tell) over one WebSocket the agent dials: a frame costs a fraction of an HTTP request on both
sides. Each request frame has an id chosen by the agent; the reply with that id carries an
HTTP-like status and the body the matching route would return (204 and no body for an empty
long-poll). A new agent process fetches its first config and posts its first check-in over
plain HTTP, before it loads this module (see agent_runtime.transport.boot).

The channel also carries the workspace, whose truth is the orchestrator's copy: the agent's
writes go up as `workspace_write` frames (answered like a write route: 200, 413, 422...), and
the orchestrator sends the whole workspace when the channel opens and each accepted change as
it happens. Those arrive as `AgentRequest` messages: the orchestrator's own requests, with ids
of its own, which the agent answers with `answer` frames (never replied to). What the operator
reads from the agent's own storage (memory, learnings, daily logs) is asked the same way; the
operations are listed in `AgentOp`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from agent_runtime.context_settings import CognitionJobs as CognitionJobs
from agent_runtime.context_settings import CognitionJobSettings as CognitionJobSettings
from agent_runtime.context_settings import ContextSettings as ContextSettings
from agent_runtime.context_settings import ContextStrategy as ContextStrategy
from agent_runtime.context_settings import ContextThresholds as ContextThresholds
from agent_runtime.tool_protocol import (
    HTTP_REQUEST as HTTP_REQUEST,
)
from agent_runtime.tool_protocol import (
    MCP_SEPARATOR as MCP_SEPARATOR,
)
from agent_runtime.tool_protocol import (
    ApprovalDecision as ApprovalDecision,
)
from agent_runtime.tool_protocol import (
    ApprovalItem as ApprovalItem,
)
from agent_runtime.tool_protocol import (
    ApprovalRequest as ApprovalRequest,
)
from agent_runtime.tool_protocol import (
    ApprovalState as ApprovalState,
)
from agent_runtime.tool_protocol import (
    OrchestratorTool as OrchestratorTool,
)
from agent_runtime.tool_protocol import (
    OrchestratorToolCall as OrchestratorToolCall,
)
from agent_runtime.tool_protocol import (
    OrchestratorToolResult as OrchestratorToolResult,
)
from agent_runtime.tool_protocol import (
    OrchestratorTools as OrchestratorTools,
)
from agent_runtime.tool_protocol import (
    RunOutcome as RunOutcome,
)
from agent_runtime.tool_protocol import (
    RunRecord as RunRecord,
)
from agent_runtime.tool_protocol import (
    ToolCallRecord as ToolCallRecord,
)
from agent_runtime.tool_protocol import (
    approval_key as approval_key,
)
from agent_runtime.tool_protocol import (
    needs_approval as needs_approval,
)
from agent_runtime.tool_protocol import (
    offered_name as offered_name,
)
from agent_runtime.wire import WireModel as WireModel
from agent_runtime.wire import utcnow as utcnow
from agent_runtime.workspace.wire import OperationSpec as OperationSpec
from agent_runtime.workspace.wire import WorkspaceWrite as WorkspaceWrite
from agent_runtime.workspace.wire import WorkspaceWriteResult as WorkspaceWriteResult

PROTOCOL_VERSION = 2
# The first protocol whose agents read `InboxItem.config_hash`: an agent that checks in with an
# older one (a container from before an upgrade) is handed items without it.
CONFIG_HASH_PROTOCOL = 2
AGENT_API_PREFIX = "/agent/v1"
# Sent with each model call an agent makes for a run: the gateway's ledger keeps it, and the
# run record then carries the settled tokens, cost and answering model of that run's calls.
RUN_HEADER = "x-flotilla-run"
# One per logical model call, the same when the agent makes that call again after its reply
# stream broke: the gateway answers a settled call from its record and never charges it twice.
IDEMPOTENCY_HEADER = "Idempotency-Key"


class ItemKind(StrEnum):
    OPERATOR_MESSAGE = "operator_message"
    HEARTBEAT = "heartbeat"
    PEER_ASK = "peer_ask"
    PEER_TELL = "peer_tell"
    HOOK = "hook"


class HeartbeatReason(WireModel):
    """Why a heartbeat tick was judged actionable by the deterministic pre-checks."""

    kind: Literal["inbox", "rule", "workspace_changed", "retry", "manual"]
    detail: str = ""


class BudgetLeft(WireModel):
    scope: Literal["agent", "fleet"]
    kind: Literal["daily_usd", "monthly_usd", "daily_tokens", "monthly_tokens"]
    left: float = Field(description="What remains of the cap in the current window")
    resets_at: datetime


class RuntimeSnapshot(WireModel):
    """The agent's surroundings when an item is handed to it. The agent shows it in the item's
    message, the volatile end of the prompt, so it never changes the cached prefix."""

    at: datetime
    peers: dict[str, Literal["idle", "busy", "starting", "stopping", "not running"]] = Field(
        default_factory=dict, description="The agents it talks to, by the state of their last check-in"
    )
    budgets: list[BudgetLeft] = Field(default_factory=list)
    inbox_waiting: int = Field(default=0, ge=0, description="Other items queued for the agent")


class InboxItem(WireModel):
    id: str
    kind: ItemKind
    created_at: datetime
    sender: str = Field(description="'operator', 'scheduler', the name of a peer agent, or 'hook:NAME'")
    principal: str = Field(
        default="",
        description="Who the item came from, as a principal: 'operator', 'scheduler', 'agent:NAME', "
        "'hook:NAME', 'person:CHANNEL:USER' (empty from an orchestrator that did not say)",
    )
    text: str = ""
    operation: str | None = None
    input: dict[str, Any] | None = None
    correlation_id: str | None = None
    hop: int = 0
    trace: list[str] = Field(default_factory=list)
    reasons: list[HeartbeatReason] = Field(default_factory=list)
    attempt: int = 1
    deadline: datetime | None = None
    snapshot: RuntimeSnapshot | None = Field(default=None, description="Set when handed to the agent")
    config_hash: str | None = Field(
        default=None,
        description="Set when handed to the agent: the hash of its config in force; an agent whose "
        "config differs reloads it before working on the item",
    )

    @model_serializer(mode="wrap")
    def _without_unset_hash(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out when not set: an agent of an older protocol refuses a field it does not know.
        data: dict[str, Any] = handler(self)
        if data.get("config_hash") is None:
            data.pop("config_hash", None)
        return data


class WorkResult(WireModel):
    """What the agent reports when it has finished an inbox item."""

    ok: bool = True
    text: str = ""
    output: dict[str, Any] | None = None
    error: str | None = None
    run_id: str | None = None


class ReplyChunk(WireModel):
    delta: str


class ContextStatus(WireModel):
    window: int
    used_tokens: int
    tokenizer: Literal["cl100k", "estimate"]
    compactions: int = 0
    flushes: int = 0


class CheckIn(WireModel):
    state: Literal["starting", "idle", "busy", "stopping"]
    pid: int
    uptime_s: float
    rss_bytes: int | None = None
    turns: int = 0
    current_item: str | None = None
    context: ContextStatus | None = None
    memory_mode: Literal["hybrid", "keyword", "unknown"] = "unknown"
    memory_problem: str | None = Field(
        default=None, description="memory.db was damaged at start: what was wrong and where it was kept"
    )
    memory_due_at: datetime | None = Field(
        default=None,
        description="When the agent's next memory job is due by its schedule: the orchestrator wakes a "
        "hibernated agent for it",
    )
    disk_free_bytes: int | None = Field(default=None, description="Free bytes on the agent's /data")
    disk_full: bool = Field(
        default=False,
        description="A write failed for want of space, or almost none is left: the agent answers "
        "but keeps no record of its work until space is freed",
    )
    protocol: int = PROTOCOL_VERSION


class CheckInReply(WireModel):
    ok: bool = True
    config_hash: str


# The agent channel's largest message, both ways, unless fleet.yaml `limits.channel_frame` is lower.
DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024


class LoopLimits(WireModel):
    max_iterations: int = 12
    max_tool_rounds: int = 8
    max_repeated_tool_calls: int = 3


class McpServerSpec(WireModel):
    """An MCP server the agent starts over stdio (fleet.yaml `tools.mcp`)."""

    name: str
    command: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    allow: list[str] | None = None
    timeout_s: float = 60.0


class ToolSettings(WireModel):
    """The agent's MCP servers and which tool calls wait for an operator's approval.

    `approval_required` holds tool names, `SERVER__*` for every tool of an MCP server,
    `PEER.OPERATION` for an `ask_agent` call of that operation, and `http_request.METHOD` for
    `http_request` calls with that method.
    """

    mcp: list[McpServerSpec] = Field(default_factory=list)
    orchestrator_mcp: list[str] = Field(
        default_factory=list,
        description="HTTP MCP servers the orchestrator reaches for the agent: their tools come from "
        "GET /agent/v1/tools and are called with POST /agent/v1/tools/call",
    )
    host_tools: list[str] = Field(
        default_factory=list,
        description="The orchestrator's own tools enabled for the agent (http_request, exec, notify): "
        "listed and called through the same routes as orchestrator_mcp",
    )
    approval_required: list[str] = Field(default_factory=list)
    approval_timeout_s: float = 600.0


ItemSource = Literal["operator", "person", "hook", "peer", "heartbeat"]
DEFAULT_SHARED_WRITERS: tuple[ItemSource, ...] = ("operator", "peer", "heartbeat")


def item_source(principal: str) -> ItemSource:
    """The kind of sender a principal names: 'operator', 'person:CHANNEL:USER', 'hook:NAME',
    'agent:NAME' (a peer) or 'scheduler' (a heartbeat)."""
    if principal.startswith("person:"):
        return "person"
    if principal.startswith("hook:"):
        return "hook"
    if principal.startswith("agent:"):
        return "peer"
    if principal == "scheduler":
        return "heartbeat"
    return "operator"


class AgentRuntimeConfig(WireModel):
    """Everything an agent needs to run, served by the orchestrator at start-up.

    Contains no secret: provider keys stay in the orchestrator.
    """

    fleet: str
    agent: str
    role: str = ""
    model: str
    heartbeat_model: str | None = None
    context_window: int
    embedding_model: str | None = None
    # None: the embedding model's own size, learnt from its first answer (not sent to it).
    embedding_dimensions: int | None = None
    # None: the figure measured for the embedding model, if any (MemoryConfig.contradiction_similarity).
    contradiction_similarity: float | None = Field(default=None, ge=0, le=1)
    thresholds: ContextThresholds = Field(default_factory=ContextThresholds)
    limits: LoopLimits = Field(default_factory=LoopLimits)
    talks_to: list[str] = Field(default_factory=list)
    max_frame_bytes: int = Field(
        default=DEFAULT_MAX_FRAME_BYTES,
        description="Largest channel frame the orchestrator accepts from this agent",
    )
    workspace_quota_bytes: int = 8 * 1024 * 1024
    tools: ToolSettings = Field(default_factory=ToolSettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    memory_shared_writers: list[ItemSource] = Field(
        default_factory=lambda: list(DEFAULT_SHARED_WRITERS),
        description="Senders whose conversations may save facts to the agent's shared memory; a "
        "fact saved while another sender's item is worked on goes to that sender's own scope",
    )
    config_hash: str


class AgentEvent(WireModel):
    """An event the agent reports; the orchestrator republishes it on its event bus."""

    type: str
    data: dict[str, Any] = Field(default_factory=dict)
    at: datetime = Field(default_factory=utcnow)


class PeerInfo(WireModel):
    name: str
    role: str = ""
    operations: list[OperationSpec] = Field(default_factory=list)
    interface_text: str = ""


class AskRequest(WireModel):
    to: str
    operation: str
    input: dict[str, Any] = Field(default_factory=dict)
    timeout_s: float = 120.0
    idempotency_key: str | None = None
    parent_item: str | None = Field(
        default=None, description="The inbox item being worked on, for hop counting and tracing"
    )


class BrokerError(WireModel):
    code: Literal[
        "acl_denied",
        "unknown_agent",
        "unknown_operation",
        "invalid_input",
        "invalid_output",
        "timeout",
        "hop_limit",
        "cycle",
        "expired",
        "failed",
    ]
    message: str
    details: list[str] = Field(default_factory=list)


class AskResult(WireModel):
    message_id: str
    ok: bool
    output: dict[str, Any] | None = None
    error: BrokerError | None = None


class TellRequest(WireModel):
    to: str
    text: str
    idempotency_key: str | None = None
    parent_item: str | None = None


class TellResult(WireModel):
    message_id: str
    ok: bool
    error: BrokerError | None = None


class TokenCountRequest(WireModel):
    model: str
    texts: list[str]


class TokenCountResult(WireModel):
    counts: list[int]
    tokenizer: Literal["cl100k", "estimate"]


class ErrorBody(WireModel):
    """The JSON body of every error the orchestrator returns."""

    error: str
    message: str
    details: list[str] = Field(default_factory=list)


# --- the channel (one WebSocket per agent) ---------------------------------------------------


class ChannelFrame(WireModel):
    id: int = Field(
        default=0, ge=0, description="Set by the agent's channel as it sends; the reply carries it"
    )


class ChannelConfig(ChannelFrame):
    """The agent's configuration (as GET /agent/v1/config): asked once by each new process, and
    again (`reload`) by a running one whose check-in reply carried another config hash."""

    type: Literal["config"] = "config"
    reload: bool = False


class ChannelCheckIn(ChannelFrame):
    type: Literal["checkin"] = "checkin"
    checkin: CheckIn


class ChannelAsk(ChannelFrame):
    type: Literal["ask"] = "ask"
    request: AskRequest


class ChannelTell(ChannelFrame):
    type: Literal["tell"] = "tell"
    request: TellRequest


class ChannelNext(ChannelFrame):
    """Claim the next inbox item, waiting up to wait_s for one (the long-poll)."""

    type: Literal["next"] = "next"
    wait_s: float = Field(ge=0)


class ChannelDone(ChannelFrame):
    type: Literal["done"] = "done"
    item_id: str
    result: WorkResult


class ChannelProgress(ChannelFrame):
    type: Literal["progress"] = "progress"
    item_id: str
    delta: str


class WorkspaceFileCopy(WireModel):
    name: str
    content: str
    version: int | None = None
    binary_b64: str | None = Field(
        default=None, description="A binary file's bytes (a screenshot), base64; `content` is then empty"
    )


class WorkspaceCopy(WireModel):
    """Workspace files as the orchestrator holds them (all of them, or the ones that changed)."""

    files: list[WorkspaceFileCopy] = Field(default_factory=list)


class ChannelWorkspaceWrite(ChannelFrame):
    """A write by the agent (its tool, a fact flush, compaction, a job) of one workspace file:
    the orchestrator checks, caps and versions it, then the agent mirrors it. Replies with a
    WorkspaceWriteResult, or 413 (over the cap), 422 (invalid), 403 (read-only)."""

    type: Literal["workspace_write"] = "workspace_write"
    name: str
    write: WorkspaceWrite


MAX_FORGOTTEN_TEXTS = 20
MAX_FORGOTTEN_TEXT_CHARS = 4000


class ChannelForgotten(ChannelFrame):
    """The texts of facts the agent's model forgot during an item, sent once the item is done:
    the orchestrator rewrites its own copies of them (the kept versions of the workspace files,
    and the agent's conversation rows in state.db). Replies with ForgottenCopies."""

    type: Literal["forgotten"] = "forgotten"
    texts: list[Annotated[str, Field(min_length=1, max_length=MAX_FORGOTTEN_TEXT_CHARS)]] = Field(
        min_length=1, max_length=MAX_FORGOTTEN_TEXTS
    )


class ForgottenCopies(WireModel):
    """How many of the orchestrator's copies a forget rewrote."""

    versions: int = Field(ge=0, description="Kept versions of workspace files rewritten")
    rows: int = Field(ge=0, description="Rows of state.db rewritten (inbox, runs, events)")


class ChannelRetiring(ChannelFrame):
    """This process is about to restart in place (an idle release, a restore): once the
    orchestrator has replied it sends no request on this channel and waits for the next
    process's channel instead, so that none is lost in the restart."""

    type: Literal["retiring"] = "retiring"


class ChannelAnswer(ChannelFrame):
    """The agent's answer to an AgentRequest: HTTP-like status and body; no reply comes back."""

    type: Literal["answer"] = "answer"
    request: int
    status: int
    body: Any = None


ChannelRequest = Annotated[
    ChannelConfig
    | ChannelCheckIn
    | ChannelAsk
    | ChannelTell
    | ChannelNext
    | ChannelDone
    | ChannelProgress
    | ChannelWorkspaceWrite
    | ChannelForgotten
    | ChannelRetiring
    | ChannelAnswer,
    Field(discriminator="type"),
]


class AgentOp(StrEnum):
    """What the orchestrator may ask of an agent over its channel."""

    WORKSPACE_SYNC = "workspace.sync"  # WorkspaceCopy: the whole workspace; replaces the working copy
    WORKSPACE_PUT = "workspace.put"  # WorkspaceCopy: files that changed
    MEMORY_STATUS = "memory.status"
    MEMORY_LIST = "memory.list"
    MEMORY_ADD = "memory.add"
    MEMORY_GET = "memory.get"
    MEMORY_EDIT = "memory.edit"
    MEMORY_FORGET = "memory.forget"
    MEMORY_SEARCH = "memory.search"
    # {"q", "k", "as_of"?} -> MemoryHistoryResult: versions of the facts found, with their validity
    MEMORY_HISTORY = "memory.history"
    MEMORY_CONTRADICTIONS = "memory.contradictions"
    MEMORY_RESOLVE = "memory.resolve"
    MEMORY_JOBS = "memory.jobs"  # {} -> MemoryJobs: run records and checkpoints
    MEMORY_RUN = "memory.run"  # {"job": name} -> MemoryJobRun: the job run now
    # {} -> FreshStoreAccepted: keep the store that replaced a damaged memory.db
    MEMORY_ACCEPT_FRESH = "memory.accept_fresh"
    FILES_LIST = "files.list"  # {"folder": "learnings"} -> FileListing
    FILES_READ = "files.read"  # {"path": "learnings/x.md", "limit": n} -> FileText
    HISTORY_READ = "history.read"  # TranscriptQuery -> TranscriptPage (agent_runtime.workspace.transcript)
    SNAPSHOT_TAKE = "snapshot.take"  # -> SnapshotListing (agent_runtime.workspace.snapshot)
    SNAPSHOT_READ = "snapshot.read"  # {"path": p, "offset": n} -> SnapshotChunk
    SNAPSHOT_DROP = "snapshot.drop"  # -> {"dropped": bool}
    RESTORE_BEGIN = "restore.begin"  # RestorePlan -> RestoreStaged (agent_runtime.workspace.restore)
    RESTORE_WRITE = "restore.write"  # RestoreChunk -> RestoreStaged
    RESTORE_COMMIT = "restore.commit"  # {} -> RestoreApplied; the agent then restarts on its files
    RESTORE_ABORT = "restore.abort"  # {} -> {"dropped": bool}


class FreshStoreAccepted(WireModel):
    """The operator kept the store that replaced a damaged memory.db; `accepted` is false when
    the agent's store was not such a store. Full (hybrid) search from the agent's next start."""

    accepted: bool


class MemoryJobRun(WireModel):
    """One run of a memory job, as the operator sees it."""

    job: str
    family: Literal["maintenance", "cognition"] = Field(
        description="maintenance: the memory store's jobs; cognition: the checkpoint strategy's"
    )
    trigger: str
    model: str | None = None
    outcome: str
    started_at: datetime
    finished_at: datetime | None = None
    detail: str = ""
    changes: list[str] = Field(default_factory=list)


class MemoryJobCheckpoint(WireModel):
    job: str
    family: Literal["maintenance", "cognition"]
    value: dict[str, Any] = Field(default_factory=dict)


class MemoryJobDue(WireModel):
    job: str
    family: Literal["maintenance", "cognition"]
    next_due: datetime = Field(description="When its schedule runs it next (UTC); past: at the next check")


class MemoryJobs(WireModel):
    strategy: ContextStrategy
    jobs: list[str] = Field(description="The jobs `memory run` accepts")
    due: list[MemoryJobDue] = Field(
        default_factory=list, description="Each job's next scheduled run, soonest first"
    )
    checkpoints: list[MemoryJobCheckpoint] = Field(default_factory=list)
    runs: list[MemoryJobRun] = Field(default_factory=list, description="Newest first")


class AgentRequest(WireModel):
    """A request from the orchestrator to the agent, on the agent's channel."""

    request: int = Field(ge=1)
    op: AgentOp
    body: dict[str, Any] = Field(default_factory=dict)


class FileEntry(WireModel):
    path: str
    size: int
    is_dir: bool = False


class FileListing(WireModel):
    files: list[FileEntry] = Field(default_factory=list)


class FileText(WireModel):
    path: str
    content: str


class SnapshotFile(WireModel):
    path: str = Field(description="Relative to the agent's /data")
    size: int = Field(ge=0)
    sha256: str


class SnapshotListing(WireModel):
    """What a snapshot of the agent's own storage holds."""

    files: list[SnapshotFile] = Field(default_factory=list)
    memory_schema: str | None = Field(default=None, description="memory.db's schema version")


class SnapshotChunk(WireModel):
    path: str
    offset: int = Field(ge=0)
    data: str = Field(description="base64")
    eof: bool


class RestorePlan(WireModel):
    """The files of a snapshot the orchestrator is about to hand an agent, as a snapshot lists them."""

    files: list[SnapshotFile] = Field(default_factory=list)


class RestoreChunk(WireModel):
    path: str
    offset: int = Field(ge=0)
    data: str = Field(description="base64")


class RestoreStaged(WireModel):
    path: str | None = None
    received: int = Field(ge=0, description="Bytes of `path` staged so far (of the whole plan for begin)")


class RestoreApplied(WireModel):
    files: int = Field(ge=0)
    bytes: int = Field(ge=0)
    restarting: bool = Field(description="The agent ends its process so that it runs on the restored files")


class ChannelReply(WireModel):
    id: int
    status: int = Field(description="As the matching HTTP route would answer: 200, 204, 4xx, 5xx")
    body: Any = Field(default=None, description="The route's JSON body; an ErrorBody when status >= 400")


# ------------------------------------------------------------------ the turn log (history.read)

MAX_TURNS = 500
TranscriptRole = Literal["system", "user", "assistant", "tool"]


class ToolCallView(BaseModel):
    id: str = ""
    name: str = ""
    arguments: str = ""
    truncated: bool = False


class TranscriptMessage(BaseModel):
    id: str
    at: str
    role: TranscriptRole
    content: str = ""
    truncated: bool = Field(default=False, description="The content was cut to the first MAX_TEXT chars")
    tool_calls: list[ToolCallView] = Field(default_factory=list)
    tool_call_id: str | None = Field(default=None, description="On a tool result: the call it answers")
    name: str | None = Field(default=None, description="On a tool result: the tool's name")
    item_id: str | None = None


class TranscriptPage(BaseModel):
    messages: list[TranscriptMessage] = Field(default_factory=list, description="Oldest first")
    last_id: str | None = Field(default=None, description="Ask again with after=last_id for what follows")
    earlier: bool = Field(default=False, description="Older turns exist than the ones returned")


class TranscriptQuery(BaseModel):
    turns: int = Field(default=20, ge=1, le=MAX_TURNS)
    after: str | None = Field(default=None, description="Only messages logged after this message id")
    item_id: str | None = Field(default=None, max_length=64, description="Only the messages of this item")

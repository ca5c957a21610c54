"""Works one inbox item at a time: prompt, tool loop, reply stream, result, run record, logs.

Imported on the first item, not at start-up: this is where the model client, the tools and the
memory store come in, and an idle agent never pays for them.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agent_runtime import sqlite_driver
from agent_runtime.process.disk_space import DiskSpace, is_disk_full
from agent_runtime.process.settings import Settings, SettingsError, read_token
from agent_runtime.process.state import RuntimeState
from agent_runtime.protocol import (
    MAX_FORGOTTEN_TEXT_CHARS,
    MAX_FORGOTTEN_TEXTS,
    AgentEvent,
    AgentRuntimeConfig,
    ContextStrategy,
    InboxItem,
    ItemKind,
    RunOutcome,
    RunRecord,
    WorkResult,
    item_source,
)
from agent_runtime.tools.approval import ApprovalClient, ApprovalGate
from agent_runtime.tools.build import build_tools
from agent_runtime.tools.orchestrator_mcp import OrchestratorMcp
from agent_runtime.tools.registry import Tool
from agent_runtime.transport.client import OrchestratorClient
from agent_runtime.transport.errors import OrchestratorError
from agent_runtime.work.chat import ChatClient
from agent_runtime.work.context import ContextManager
from agent_runtime.work.conversations import Conversations, conversation_scope
from agent_runtime.work.dedupe import ProcessedLog
from agent_runtime.work.facts import MemoryFileFacts
from agent_runtime.work.loop import LoopFailed, LoopResult, OpenAICompleter, RunTag, ToolLoop
from agent_runtime.work.memory_bridge import MemoryBridge
from agent_runtime.work.prompt import HEARTBEAT_OK, StaticBlocks, build_static_blocks, current_message
from agent_runtime.work.run_records import UnsentRuns
from agent_runtime.work.tokens import CachingCounter
from agent_runtime.workspace.dailylog import append_daily
from agent_runtime.workspace.files import WorkspaceFiles
from agent_runtime.workspace.history import HistoryLog
from agent_runtime.workspace.learnings import Learnings
from agent_runtime.workspace.versioned import Workspace

if TYPE_CHECKING:
    from agent_runtime.cognition.runner import CognitionRunner

log = logging.getLogger(__name__)

PROGRESS_MIN_CHARS = 512
PROGRESS_MAX_DELAY_S = 0.2
# The chat client's retries cover only what the gateway never answered (the orchestrator unreachable or
# restarting): every answer the gateway gives after retrying the provider itself says
# `x-should-retry: false`, which the chat client obeys, so retries never multiply.
MODEL_RETRIES = 2
Trigger = Literal["operator", "person", "heartbeat", "peer", "hook", "maintenance"]
TRIGGERS: dict[ItemKind, Trigger] = {
    ItemKind.OPERATOR_MESSAGE: "operator",
    ItemKind.HEARTBEAT: "heartbeat",
    ItemKind.PEER_ASK: "peer",
    ItemKind.PEER_TELL: "peer",
    ItemKind.HOOK: "hook",
}


def trigger_of(item: InboxItem) -> Trigger:
    """What started a run: a paired person's message is told apart from the operator's."""
    if item_source(item.principal) == "person":
        return "person"
    return TRIGGERS[item.kind]


class ProgressStream:
    """Batches reply deltas into few POSTs; a failed post never fails the item."""

    def __init__(self, client: OrchestratorClient, item_id: str) -> None:
        self.client = client
        self.item_id = item_id
        self._buffer: list[str] = []
        self._size = 0
        self._last = 0.0  # the first delta goes out at once
        self._broken = False

    def add(self, delta: str) -> None:
        self._buffer.append(delta)
        self._size += len(delta)
        if self._size >= PROGRESS_MIN_CHARS or time.monotonic() - self._last >= PROGRESS_MAX_DELAY_S:
            self.flush()

    def flush(self) -> None:
        if not self._buffer:
            return
        text = "".join(self._buffer)
        self._buffer, self._size, self._last = [], 0, time.monotonic()
        if self._broken:
            return
        try:
            self.client.progress(self.item_id, text)
        except OrchestratorError as failed:
            self._broken = True
            log.warning("reply streaming for %s stopped: %s", self.item_id, failed)


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in a reply (bare, or inside a code fence)."""
    decoder = json.JSONDecoder()
    position = text.find("{")
    while position != -1:
        try:
            value, _end = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            return value
        position = text.find("{", position + 1)
    return None


def peer_output(text: str, schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The structured answer to a peer's request, checked by the broker against the contract.

    The broker reads an answer without output as {"text": reply}. So: the reply's JSON object
    when it fits the output schema; else nothing when {"text": reply} fits; else the object
    (or nothing) for the broker to report as not matching.
    """
    candidate = extract_json_object(text)
    if schema is None:
        return candidate
    from agent_runtime.workspace.contracts import validate_payload

    if candidate is not None and not validate_payload(schema, candidate):
        return candidate
    if not validate_payload(schema, {"text": text}):
        return None
    return candidate


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    state = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            try:
                info = path.lstat()
            except FileNotFoundError:
                continue
            state[path.relative_to(root).as_posix()] = (info.st_mtime_ns, info.st_size)
    return state


def _changed(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


class Worker:
    def __init__(
        self,
        settings: Settings,
        config: AgentRuntimeConfig,
        client: OrchestratorClient,
        state: RuntimeState,
        *,
        model_retries: int = MODEL_RETRIES,
        disk: DiskSpace | None = None,
    ) -> None:
        self.settings = settings
        self.disk = disk or DiskSpace(settings.data_dir)
        self.config = config
        self.client = client
        self.state = state
        data = settings.data_dir
        self.workspace_root = data / "workspace"
        for folder in (self.workspace_root / "memory", self.workspace_root / "learnings", data / "history"):
            folder.mkdir(parents=True, exist_ok=True)
        self.workspace = Workspace(data)
        self.learnings = Learnings(self.workspace_root)
        self.files = WorkspaceFiles(self.workspace_root, config.workspace_quota_bytes)
        self.processed = ProcessedLog(data)
        self.unsent_runs = UnsentRuns(client.record_run)
        self.llm = ChatClient(f"{settings.orchestrator_url}/v1", client.token, max_retries=model_retries)
        self.run_tag = RunTag()
        completer = OpenAICompleter(self.llm, lambda: self.config.model, self.run_tag)
        self.memory = MemoryBridge.open(settings, config, lambda: self.client.token, completer.ask)
        state.set_memory_mode(self.memory.mode)
        self._current_item: str | None = None
        self._shares = True
        """Whether the item being worked on may change what every conversation's prompt shows."""
        self._in_main = True
        """Whether the item being worked on is in the main conversation (not a person's own)."""
        mcp_tools = self._start_mcp(config)
        self.approvals = ApprovalClient(client.http)
        gate = ApprovalGate(
            self.approvals,
            lambda: self.config.tools,
            lambda: self._current_item,
            lambda: self.run_tag.run_id,
            on_wait=lambda item: log.info("tool call %s waits for approval %s", item.tool, item.id),
        )
        self.registry = build_tools(
            workspace=self.workspace,
            files=self.files,
            learnings=self.learnings,
            memory_tools=self.memory.tools,
            peer_tools=self._peer_tools(),
            mcp_tools=[*mcp_tools, *self._orchestrator_tools(config)],
            on_failure=self._record_tool_error,
            gate=gate,
            writes_shared=lambda: self._shares,
        )
        if config.context.strategy == ContextStrategy.CHECKPOINT:
            self.registry.add(self._proposal_tool())
        counter = CachingCounter(
            lambda texts: client.count_tokens(self.config.model, texts), (OrchestratorError,)
        )
        self.cognition: CognitionRunner | None = None
        self.context = self._context_manager(counter, completer)
        self.context.load()
        self.conversations = Conversations(
            self.context,
            lambda scope, state_path, history: self._person_context(
                counter, completer, scope, state_path, history
            ),
            data,
            settings.runtime_dir,
        )
        self._forgotten_in_item: list[str] = []
        self.memory.on_forget(self.forget_copies)
        self.loop = ToolLoop(
            self.llm, self.registry, self.context, self.static_blocks, config.limits, self.run_tag
        )

    def _start_mcp(self, config: AgentRuntimeConfig) -> list[Tool]:
        """The tools of the agent's own MCP servers, started now; the MCP client (and asyncio)
        is loaded only by an agent that has some."""
        if not config.tools.mcp:
            return []
        from agent_runtime.tools.mcp import McpServers

        servers = McpServers(config.tools.mcp, self.workspace_root, self.settings.runtime_dir)
        problems = servers.start()
        for problem in problems:
            log.warning("%s", problem)
        self.emit("mcp.started", {"servers": [s.name for s in config.tools.mcp], "problems": problems})
        return servers.tools()

    def _orchestrator_tools(self, config: AgentRuntimeConfig) -> list[Tool]:
        """The tools the orchestrator runs for this agent: its HTTP MCP servers' and its host tools."""
        if not (config.tools.orchestrator_mcp or config.tools.host_tools):
            return []
        remote = OrchestratorMcp(self.client.http, lambda: self._current_item)
        tools, problems = remote.tools()
        for problem in problems:
            log.warning("%s", problem)
        self.emit(
            "mcp.started",
            {"servers": list(config.tools.orchestrator_mcp), "problems": problems, "via": "orchestrator"},
        )
        return tools

    def _context_base(self, counter: CachingCounter, completer: OpenAICompleter) -> dict[str, Any]:
        return {
            "window": self.config.context_window,
            "thresholds": self.config.thresholds,
            "counter": counter,
            "completer": completer,
            "memory_file": MemoryFileFacts(self.workspace),
            "store": self.memory.store,
            "history_log": self._history_log(),
            "state_path": self.settings.runtime_dir / "context.json",
            "tools_text": json.dumps(self.registry.specs(), sort_keys=True),
            "emit": self.emit,
        }

    def _history_log(self, root: Path | None = None) -> HistoryLog:
        """A turn log that, at a full disk, writes its turns in the space reserve."""
        return HistoryLog(
            self.settings.data_dir,
            self.disk.note_failed_write,
            root=root,
            make_room=self.disk.release_reserve,
        )

    def _person_context(
        self,
        counter: CachingCounter,
        completer: OpenAICompleter,
        scope: str,
        state_path: Path,
        history: Path,
    ) -> ContextManager:
        """A paired person's own conversation, compacted with summaries whatever the agent's
        strategy (the checkpoint strategy's consolidation reads the main transcript only). Its
        flushes keep facts in the person's scope, and write MEMORY.md (in every conversation's
        prompt) only when the admission rule lets people write the shared scope."""
        base = self._context_base(counter, completer)
        shares = self.memory.shares(scope)
        base.update(
            memory_file=base["memory_file"] if shares else None,
            store=self.memory.person_facts(scope),
            history_log=self._history_log(history),
            state_path=state_path,
        )
        return ContextManager(**base)

    def _context_manager(self, counter: CachingCounter, completer: OpenAICompleter) -> ContextManager:
        """The context manager of the agent's strategy: `compact` (summaries) or `checkpoint`
        (whole transcript, replay after the consolidation checkpoint, working memory)."""
        data = self.settings.data_dir
        base = self._context_base(counter, completer)
        settings = self.config.context
        if settings.strategy != ContextStrategy.CHECKPOINT:
            return ContextManager(**base)
        from agent_runtime.cognition.context import CheckpointContext
        from agent_runtime.cognition.files import CognitionFiles
        from agent_runtime.cognition.runner import CognitionRunner

        def model_call(model: str) -> Callable[[str], str]:
            return OpenAICompleter(self.llm, lambda: model).ask

        files = CognitionFiles(data)
        self.cognition = CognitionRunner(data, settings, agent_model=self.config.model, model_call=model_call)
        return CheckpointContext(files=files, settings=settings, on_overflow=self.maintain, **base)

    def _proposal_tool(self) -> Tool:
        """The model's way to change its working and semantic memory, which it cannot write."""
        from agent_runtime.cognition.files import CognitionFiles
        from agent_runtime.cognition.proposals import (
            PROPOSAL_DESCRIPTION,
            PROPOSAL_SPEC,
            TOOL_NAME,
            ProposalDesk,
        )

        store = self.memory.memory_store

        def forgotten(text: str) -> bool:
            return store is not None and bool(store.forgotten_matcher().states_forgotten(text))

        desk = ProposalDesk(CognitionFiles(self.settings.data_dir), self.memory.people, forgotten)
        return Tool(TOOL_NAME, PROPOSAL_DESCRIPTION, PROPOSAL_SPEC, desk.propose)

    def _peer_tools(self) -> list[Tool]:
        try:
            from agent_runtime.tools.peers import PeerClient, peer_tools
        except ModuleNotFoundError as missing:
            if missing.name != "agent_runtime.tools.peers":
                raise
            return []
        peers = PeerClient(
            self.settings.orchestrator_url, lambda: self.client.token, channel=self.client.channel
        )
        return peer_tools(peers, lambda: self._current_item)

    def reconfigure(self, config: AgentRuntimeConfig) -> None:
        """Apply a new config from the next item on (window, thresholds, limits, models)."""
        self.config = config
        self.conversations.reconfigure(config.context_window, config.thresholds)
        self.loop.limits = config.limits
        self.files.quota_bytes = config.workspace_quota_bytes

    def static_blocks(self) -> StaticBlocks:
        return build_static_blocks(self.config, self.workspace, self.learnings, self.memory.salient)

    def emit(self, event_type: str, data: dict[str, Any]) -> None:
        try:
            self.client.event(AgentEvent(type=event_type, data=data))
        except OrchestratorError as failed:
            log.warning("event %s not reported: %s", event_type, failed)

    def _refresh_token(self) -> None:
        try:
            self.llm.api_key = read_token(self.settings.token_file)
        except SettingsError as failed:
            log.warning("token not refreshed: %s", failed)

    def process(self, item: InboxItem) -> None:
        known = self.processed.seen(item.id)
        if known is not None:
            log.info("item %s was already processed: acknowledging it again", item.id)
            self._acknowledge(item, known)
            return
        if item.deadline is not None and item.deadline < datetime.now(UTC):
            expired = WorkResult(
                ok=False, error=f"expired at {item.deadline.isoformat()} before work started"
            )
            self.processed.record(item.id, expired)
            self._acknowledge(item, expired)
            append_daily(self.workspace_root, trigger_of(item), "skipped: expired before work started")
            return
        self._refresh_token()
        self._current_item = item.id
        run_id = self.run_tag.run_id = f"run-{secrets.token_hex(8)}"
        started = datetime.now(UTC)
        before = _snapshot(self.workspace_root)
        model = self._model_for(item)
        stream = ProgressStream(self.client, item.id)
        self._keep_record("the item in memory", lambda: self.memory.heard(item))
        # A person's conversation changes what every prompt shows only when the admission rule
        # lets people write the shared memory.
        self._in_main = not conversation_scope(item)
        self._shares = self._in_main or self.memory.shares(item.principal)
        context = self.loop.context = self.conversations.for_item(item)
        self.memory.refresh_salient(self.workspace.read("MEMORY.md"), context.compactions)
        message = current_message(
            item, self.workspace, self.static_blocks().remaining_budget, self._schema(item)
        )
        try:
            result = self.loop.run(item.id, message, model, stream.add)
        except LoopFailed as failed:
            result = LoopResult(text="", outcome=RunOutcome.ERROR, detail=str(failed))
        finally:
            self._current_item = None
            self.run_tag.run_id = None
        stream.flush()
        forgotten, self._forgotten_in_item = self._forgotten_in_item, []
        if forgotten:
            from agent_runtime.memory.forgetting import scrub

            # The reply may repeat what a tool call of this item forgot: it leaves the answer too.
            result.text, result.detail = scrub(result.text, forgotten), scrub(result.detail, forgotten)
        work = self._work_result(item, result, run_id)
        self._keep_record("the processed log", lambda: self.processed.record(item.id, work))
        self._acknowledge(item, work)
        changed = _changed(before, _snapshot(self.workspace_root))
        self._keep_record(
            "the run record", lambda: self._record_run(run_id, item, model, started, result, changed)
        )
        outcome = self._daily_outcome(item, work, result)
        self._keep_record(
            "the daily log",
            lambda: append_daily(self.workspace_root, trigger_of(item), f"{result.outcome.value}: {outcome}"),
        )
        self.state.add_turns(1)
        self.state.set_context(context.status())
        if forgotten:
            self.forget_copies(forgotten)
            self._forget_orchestrator_copies(forgotten)
        self.maintain()

    def _forget_orchestrator_copies(self, texts: list[str]) -> None:
        """The orchestrator keeps copies too (kept workspace versions, the item, its run record
        and events): asked once the item's records are sent, so they are rewritten as well."""
        for start in range(0, len(texts), MAX_FORGOTTEN_TEXTS):
            chunk = [text[:MAX_FORGOTTEN_TEXT_CHARS] for text in texts[start : start + MAX_FORGOTTEN_TEXTS]]
            try:
                self.client.forgotten(chunk)
            except OrchestratorError as failed:
                log.warning("the orchestrator's copies of a forgotten fact were not rewritten: %s", failed)

    def _keep_record(self, what: str, write: Callable[[], object], *, reserve: bool = True) -> None:
        """A write that only keeps a record of the work: at a full disk it is written once more
        in a piece of the space reserve (with `reserve`), else skipped (and the disk noted
        full), so the answer still goes back."""
        for attempt in range(2):
            try:
                write()
                return
            except (OSError, sqlite_driver.Error) as failed:
                if not is_disk_full(failed):
                    raise
                if attempt == 1 or not reserve or not self.disk.release_reserve():
                    self.disk.note_failed_write(what, failed)
                    return

    def _record_tool_error(self, tool: str, arguments: Any, error: str) -> None:
        """A failed tool call, kept in learnings/errors.md (in every conversation's prompt): of a
        person's own conversation without the error's text, which may quote what they said. At
        a full disk the lesson is not kept and the tool's answer still goes to the model."""
        if not self._in_main:
            error = "failed in a person's own conversation"
        # The reserve is kept for the history: a lesson is worth less than a turn.
        self._keep_record(
            "a failed tool call in learnings",
            lambda: self.learnings.record_error(tool, arguments, error),
            reserve=False,
        )

    @staticmethod
    def _daily_outcome(item: InboxItem, work: WorkResult, result: LoopResult) -> str:
        """What the daily log says of an item. The daily log is a workspace file every
        conversation's memory search reads: of a person's conversation it keeps no words."""
        if conversation_scope(item):
            return "in a person's own conversation"
        return work.error or result.detail or work.text

    def forget_copies(self, texts: list[str]) -> None:
        """A fact was forgotten (by the model, or by the operator while this worker runs): its
        text leaves the context held for the prompt and every file of this agent's storage.
        During an item the texts are kept until it ends, so its reply, log lines and turns
        written afterwards leave them too."""
        from agent_runtime.memory.forgetting import scrub_forgotten
        from agent_runtime.work.erasure import Eraser

        self.conversations.rewrite_texts(lambda text: scrub_forgotten(text, texts))
        Eraser(self.settings.data_dir).erase(texts)
        self.processed.reload()
        if self._current_item is not None:
            self._forgotten_in_item.extend(texts)

    def busy_in_background(self) -> bool:
        """True while a memory job (maintenance or the checkpoint strategy's) is still running."""
        runner = self.memory.maintenance
        if runner is not None and any(runner.running(name) for name in runner.jobs):
            return True
        return self.cognition is not None and self.cognition.busy()

    def maintain(self) -> None:
        """Start due memory maintenance jobs (background threads); called after items and when idle."""
        started = self.memory.tick()
        if self.cognition is not None:
            started += self.cognition.tick()
        if started:
            self.emit("maintenance.run", {"jobs": started})

    def _model_for(self, item: InboxItem) -> str:
        if item.kind == ItemKind.HEARTBEAT and self.config.heartbeat_model:
            return self.config.heartbeat_model
        return self.config.model

    def _schema(self, item: InboxItem) -> dict[str, Any] | None:
        if item.kind != ItemKind.PEER_ASK or not item.operation:
            return None
        from agent_runtime.workspace.contracts import ContractError, parse_interface

        try:
            operation = parse_interface(self.workspace.read("INTERFACE.md")).operation(item.operation)
        except ContractError:
            return None
        return operation.output_schema if operation is not None else None

    def _work_result(self, item: InboxItem, result: LoopResult, run_id: str) -> WorkResult:
        if result.outcome == RunOutcome.ERROR:
            return WorkResult(ok=False, text=result.text, error=result.detail, run_id=run_id)
        if item.kind == ItemKind.HEARTBEAT and result.text.strip().startswith(HEARTBEAT_OK):
            result.outcome = RunOutcome.IDLE
        output = peer_output(result.text, self._schema(item)) if item.kind == ItemKind.PEER_ASK else None
        return WorkResult(ok=True, text=result.text, output=output, run_id=run_id)

    def _acknowledge(self, item: InboxItem, work: WorkResult) -> None:
        try:
            self.client.done(item.id, work)
        except OrchestratorError as failed:
            # Unacknowledged items come back; the processed log answers them without new work.
            log.warning("item %s not acknowledged (it will be redelivered): %s", item.id, failed)

    def _record_run(
        self,
        run_id: str,
        item: InboxItem,
        model: str,
        started: datetime,
        result: LoopResult,
        files: list[str],
    ) -> None:
        run = RunRecord(
            id=run_id,
            agent=self.config.agent,
            trigger=trigger_of(item),
            item_id=item.id,
            model=model,
            started_at=started,
            finished_at=datetime.now(UTC),
            tokens_in=result.tokens_in,
            tokens_out=result.tokens_out,
            outcome=result.outcome,
            detail=result.detail,
            files_changed=files,
            tool_calls=result.tool_calls,
        )
        self.unsent_runs.add(run)
        self.unsent_runs.send()

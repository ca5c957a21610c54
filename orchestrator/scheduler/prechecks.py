"""Deterministic pre-checks: decide, without any model call, whether a heartbeat tick has work.

A tick is actionable when at least one of these holds:
  - inbox:   items wait in the agent's inbox;
  - rule:    a rule in HEARTBEAT.md is due;
  - workspace_changed: someone other than the agent changed a workspace file since the last tick;
  - retry:   an inbox item failed since the last tick and may be worth another try.
The agent's own writes and its log lines never count (see workspace_scan).

`evaluate` only reads; `commit` records what the tick consumed (the workspace snapshot, rule
last-done times, failures offered for retry), and is called only for ticks that were not skipped,
so a change seen during a skipped tick is still pending at the next one.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime

from agent_runtime.protocol import HeartbeatReason, ItemKind
from orchestrator.broker import FailedItem, Inbox, InboxCounts
from orchestrator.config.models import FleetConfig
from orchestrator.scheduler import workspace_scan
from orchestrator.scheduler.rules import ParsedRules, Rule, RuleError, parse_heartbeat_md, parse_rule_lines
from orchestrator.scheduler.runs import RunStore
from orchestrator.scheduler.store import SchedulerStore, Snapshot
from orchestrator.scheduler.workspace_scan import FileChange, WorkWindow
from orchestrator.state.paths import StatePaths

HEARTBEAT_FILE = "HEARTBEAT.md"
MAX_WINDOWS = 200
MAX_LISTED = 5


def _epoch(text: str | None) -> float | None:
    return datetime.fromisoformat(text).timestamp() if text else None


def work_windows(inbox: Inbox, agent: str, since_wall: float | None) -> list[WorkWindow]:
    """When the agent held inbox items, most recent first (inbox times are wall-clock)."""
    windows = []
    for claimed_at, finished_at in inbox.held_periods(agent, MAX_WINDOWS):
        start = _epoch(claimed_at)
        end = _epoch(finished_at)
        if start is None or (since_wall is not None and end is not None and end < since_wall):
            continue
        windows.append(WorkWindow(start, end))
    return windows


def _is_retry_only(reasons_json: str) -> bool:
    reasons = json.loads(reasons_json or "[]")
    return bool(reasons) and all(r.get("kind") == "retry" for r in reasons)


def failed_items(inbox: Inbox, agent: str, seen: set[str]) -> list[FailedItem]:
    """Failed items not yet offered for retry. A heartbeat that only retried something is not
    itself retried, so a failure cannot turn into a tick-after-tick loop."""
    return [
        item
        for item in inbox.failed_items(agent)
        if item.id not in seen
        and not (item.kind == ItemKind.HEARTBEAT.value and _is_retry_only(item.reasons))
    ]


@dataclass
class PrecheckResult:
    agent: str
    at: datetime
    inbox: InboxCounts
    parsed: ParsedRules
    rules_source: str
    due_rules: list[Rule] = field(default_factory=list)
    notify_rules: list[Rule] = field(default_factory=list)
    """Due rules that only send a notification: the orchestrator sends it, no model is woken."""
    changes: list[FileChange] = field(default_factory=list)
    failures: list[FailedItem] = field(default_factory=list)
    snapshot_before: Snapshot = field(default_factory=dict)
    snapshot_after: Snapshot = field(default_factory=dict)
    old_failures: list[FailedItem] = field(default_factory=list)
    runs_seq: int = 0
    baseline_only: bool = False

    @property
    def reasons(self) -> list[HeartbeatReason]:
        found = [HeartbeatReason(kind="rule", detail=f"{r.when}: {r.task}") for r in self.due_rules]
        if self.changes:
            listed = ", ".join(c.describe() for c in self.changes[:MAX_LISTED])
            more = f" and {len(self.changes) - MAX_LISTED} more" if len(self.changes) > MAX_LISTED else ""
            found.append(HeartbeatReason(kind="workspace_changed", detail=listed + more))
        for failure in self.failures[:MAX_LISTED]:
            error = f": {failure.error}" if failure.error else ""
            found.append(
                HeartbeatReason(
                    kind="retry", detail=f"{failure.kind} {failure.id} from {failure.sender} failed{error}"
                )
            )
        if self.inbox.queued:
            found.append(HeartbeatReason(kind="inbox", detail=f"{self.inbox.queued} item(s) waiting"))
        return found

    @property
    def actionable(self) -> bool:
        return bool(self.reasons)

    @property
    def needs_heartbeat_item(self) -> bool:
        """Queued items are work in themselves: they need the agent awake, not an extra model turn."""
        return any(reason.kind != "inbox" for reason in self.reasons)

    def describe(self) -> str:
        lines = [f"Heartbeat at {self.at.strftime('%Y-%m-%d %H:%M')} UTC. Due:"]
        lines += [f"- {reason.kind}: {reason.detail}" for reason in self.reasons]
        return "\n".join(lines)


def load_rules(paths: StatePaths, config: FleetConfig, agent: str) -> tuple[ParsedRules, str]:
    """Rules from the agent's HEARTBEAT.md; fleet.yaml's `heartbeat.rules` while that file does not
    exist or has no Rules section."""
    heartbeat = config.heartbeat_of(agent)
    tz = heartbeat.tz if heartbeat else "UTC"
    from_config = parse_rule_lines(heartbeat.rules if heartbeat else [], tz), "fleet.yaml"
    path = paths.workspace(agent) / HEARTBEAT_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return from_config
    except (OSError, UnicodeDecodeError) as bad:
        unreadable = RuleError(line=0, text=HEARTBEAT_FILE, message=f"cannot be read: {bad}")
        return ParsedRules(errors=[unreadable]), HEARTBEAT_FILE
    parsed = parse_heartbeat_md(text, tz)
    return (parsed, HEARTBEAT_FILE) if parsed.has_section else from_config


class Prechecks:
    def __init__(self, inbox: Inbox, paths: StatePaths, store: SchedulerStore, runs: RunStore) -> None:
        self._inbox = inbox
        self._paths = paths
        self._store = store
        self._runs = runs

    def evaluate(self, config: FleetConfig, agent: str, at: datetime, inbox: InboxCounts) -> PrecheckResult:
        parsed, source = load_rules(self._paths, config, agent)
        result = PrecheckResult(agent=agent, at=at, inbox=inbox, parsed=parsed, rules_source=source)
        due = self._due_rules(agent, parsed.rules, at)
        result.due_rules = [rule for rule in due if rule.notify is None]
        result.notify_rules = [rule for rule in due if rule.notify is not None]
        self._check_workspace(agent, result, at)
        failures = failed_items(self._inbox, agent, self._store.retry_seen(agent))
        if result.baseline_only:
            result.old_failures = failures  # from before the scheduler knew this agent
        else:
            result.failures = failures
        return result

    def _due_rules(self, agent: str, rules: list[Rule], at: datetime) -> list[Rule]:
        unique = list({rule.key: rule for rule in rules}.values())
        marks = self._store.rule_marks(agent, [rule.key for rule in unique], at)
        return [r for r in unique if r.is_due(at, marks[r.key].last_done, marks[r.key].first_seen)]

    def _check_workspace(self, agent: str, result: PrecheckResult, at: datetime) -> None:
        state = self._store.state(agent, at)
        before = self._store.snapshot(agent)
        after = workspace_scan.scan(self._paths.workspace(agent), before)
        turns = self._runs.turns_since(agent, state.runs_seq)
        result.snapshot_before, result.snapshot_after = before, after
        result.runs_seq = max([state.runs_seq, *(t.seq for t in turns)])
        if state.scanned_wall is None:
            result.baseline_only = True  # first look at this workspace: nothing to compare with
            return
        changes = workspace_scan.diff(before, after)
        if not changes:
            return
        windows = work_windows(self._inbox, agent, state.scanned_wall)
        windows += [WorkWindow(t.started_at.timestamp(), t.finished_at.timestamp()) for t in turns]
        own = {path for turn in turns for path in turn.files_changed}
        attributed = workspace_scan.attribute(
            changes, self._paths.agent_dir(agent), before, after, own, windows, time.time()
        )
        result.changes = workspace_scan.by_others(attributed)

    def commit(self, result: PrecheckResult, fired: bool) -> None:
        """Consume what this tick saw. Rules are marked done only when a heartbeat item was queued."""
        agent = result.agent
        self._store.save_snapshot(
            agent, result.snapshot_before, result.snapshot_after, time.time(), result.runs_seq
        )
        self._store.mark_retry_seen(agent, [f.id for f in result.old_failures])
        if result.notify_rules:
            self._store.mark_rules_done(agent, [r.key for r in result.notify_rules], result.at)
        if fired:
            self._store.mark_retry_seen(agent, [f.id for f in result.failures])
            self._store.mark_rules_done(agent, [r.key for r in result.due_rules], result.at)

"""The heartbeat scheduler: one asyncio task in the orchestrator's server loop.

For each agent with a `heartbeat`, the next-run time lives in SQLite, so restarts neither lose
nor repeat ticks. When a slot comes due the tick runs the deterministic pre-checks; only if they
find work does the agent get a HEARTBEAT inbox item (and so a model call). After downtime the
missed slots are either coalesced into ONE tick (`missed: coalesce`, the default) or skipped
(`missed: skip`): never one tick per missed slot.

Time comes from an injectable Clock, so tests simulate a day in milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import sqlite3
import threading
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from agent_runtime.protocol import InboxItem, ItemKind, RunRecord
from orchestrator.backends.base import Backend, BackendError
from orchestrator.config.models import HeartbeatConfig
from orchestrator.events import EventBus, EventType
from orchestrator.fleet.view import FleetView
from orchestrator.lifecycle import Controls, WorkArrived
from orchestrator.loop_calls import call_in_loop
from orchestrator.scheduler.admission import QueuedWake
from orchestrator.scheduler.cadence import Cadence
from orchestrator.scheduler.clock import Clock, SystemClock
from orchestrator.scheduler.fleet_in_force import FleetInForce
from orchestrator.scheduler.memory_due import MemoryDue
from orchestrator.scheduler.models import HeartbeatStatus, RuleProblem, RuleStatus, SkipReason, TickResult
from orchestrator.scheduler.prechecks import PrecheckResult, Prechecks, load_rules
from orchestrator.scheduler.rule_approval import unapproved_rule
from orchestrator.scheduler.runs import RunStore, TickOutcome
from orchestrator.scheduler.sleep_policy import SleepPolicy
from orchestrator.scheduler.spend_stops import SpendStops, StopTeller
from orchestrator.scheduler.store import SchedulerStore
from orchestrator.scheduler.wake_boost import WakeBoost
from orchestrator.state.db import Database
from orchestrator.state.paths import StatePaths

if TYPE_CHECKING:
    from orchestrator.broker import Inbox, InboxCounts

log = logging.getLogger(__name__)

SCHEDULER_SENDER = "scheduler"
RULES_INVALID_EVENT = "heartbeat.rules_invalid"
DEFAULT_MAX_SLEEP_S = 30.0
MIN_SLEEP_S = 0.001
TickTrigger = str


class RuleNotifier(Protocol):
    """What the scheduler needs to send a rule's notification (orchestrator.notifications)."""

    def queue_rule(self, agent: str, channel: str, text: str) -> str | None:
        """Queue it; the reason it is refused, or None."""
        ...


class Scheduler:
    def __init__(
        self,
        db: Database,
        paths: StatePaths,
        fleet: FleetView,
        inbox: Inbox,
        controls: Controls,
        events: EventBus,
        backend: Backend,
        budget: StopTeller | None = None,
        clock: Clock | None = None,
        max_sleep_s: float = DEFAULT_MAX_SLEEP_S,
        notifier: RuleNotifier | None = None,
    ) -> None:
        """`budget`: the gateway's budgets, which tell who may not spend (None: no budgets);
        `notifier`: sends the notifications of `notify CHANNEL: TEXT` rules (None: refused)."""
        self._notifier = notifier
        self._db = db
        self._paths = paths
        self._fleet = FleetInForce(fleet)
        self._inbox = inbox
        self._controls = controls
        self._events = events
        self.clock: Clock = clock or SystemClock()
        self._spend_stops = SpendStops()
        if budget is not None:
            budget.watch_stops(self._spend_stops.tell)
        self._max_sleep_s = max_sleep_s
        self.store = SchedulerStore(db)
        self.runs = RunStore(db)
        self._prechecks = Prechecks(inbox, paths, self.store, self.runs)
        self.wake_boost = WakeBoost(backend, db, fleet)
        self._sleep_policy = SleepPolicy(
            self._fleet, backend, events, inbox, self.store, self.clock, controls, self.wake_boost
        )
        self.memory_due = MemoryDue(db)
        self._tick_lock = threading.Lock()
        self._task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Future[bool]] = set()
        self._next_wakeup: datetime | None = None
        # Mirrors of persisted state, so an idle pass over many agents touches no table.
        self._plans: dict[str, tuple[str | None, datetime | None]] = {}
        self._cadences: dict[str, tuple[HeartbeatConfig, Cadence]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._replan: asyncio.Event | None = None

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        """Run the scheduling loop as a task of the running event loop."""
        if self._task is None or self._task.done():
            # Limits an orchestrator that died left raised are put back before anything wakes.
            self.wake_boost.restore_all()
            self._task = asyncio.get_running_loop().create_task(self.run(), name="flotilla-scheduler")
        return self._task

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for pending in list(self._background):
            with contextlib.suppress(BackendError):
                await pending
        # Agents keep running after the orchestrator stops: none keeps a raised limit.
        await asyncio.to_thread(self.wake_boost.restore_all)

    async def run(self, until: datetime | None = None) -> None:
        """Tick agents as their slots come due; return at `until` (never, when None)."""
        # Bound to this loop: a scheduler may be run again later in another loop (tests do).
        self._loop, self._replan = asyncio.get_running_loop(), asyncio.Event()
        while True:
            now = self.clock.now()
            if until is not None and now >= until:
                return
            self._replan.clear()
            try:
                await asyncio.to_thread(self.run_due, now)
            except (sqlite3.Error, OSError, BackendError) as exc:
                log.error("scheduler pass failed: %s", exc)
            await self._sleep(self._replan, self._delay(until))

    async def _sleep(self, replan_event: asyncio.Event, seconds: float) -> None:
        """Sleep until the next planned pass, or until `_request_replan` cuts the sleep short."""
        sleeper = asyncio.ensure_future(self.clock.sleep(seconds))
        replan = asyncio.ensure_future(replan_event.wait())
        _, pending = await asyncio.wait({sleeper, replan}, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _request_replan(self, agent: str) -> None:
        """Activity of an agent that may be put to sleep moves its deadline: plan the next pass again.
        Safe from any thread."""
        event = self._replan
        config = self._fleet.config
        if event is None or agent not in config.agents or config.hibernate_after_of(agent) is None:
            return
        call_in_loop(self._loop, event.set)

    def _delay(self, until: datetime | None) -> float:
        now = self.clock.now()
        target = self._next_wakeup or now + timedelta(seconds=self._max_sleep_s)
        delay = min(self._max_sleep_s, (target - now).total_seconds())
        if until is not None:
            delay = min(delay, (until - now).total_seconds())
        return max(MIN_SLEEP_S, delay)

    # --- scheduled ticks -------------------------------------------------------------------

    def run_due(self, now: datetime | None = None) -> list[TickResult]:
        """One pass: tick every agent whose slot is due, put idle agents to sleep."""
        now = now or self.clock.now()
        config = self._fleet.config
        results, upcoming = [], []
        for agent in config.agents:
            heartbeat = config.heartbeat_of(agent)
            try:
                cadence = self._cadence(agent, heartbeat)
                next_run = self._planned(agent, cadence, now)
                if cadence is None or next_run is None:
                    continue
                if next_run <= now:
                    result, next_run = self._run_slot(agent, cadence, next_run, now)
                    results.append(result)
            except (sqlite3.Error, OSError, BackendError) as exc:
                log.error("heartbeat of %s failed: %s", agent, exc)
                continue
            upcoming.append(next_run)
        _, sleep_at = self._sleep_policy.sweep(now)
        upcoming += [sleep_at] if sleep_at else []
        upcoming += self._wake_for_memory_jobs(config.agents, now)
        self._next_wakeup = min(upcoming, default=None)
        return results

    def _cadence(self, agent: str, heartbeat: HeartbeatConfig | None) -> Cadence | None:
        if heartbeat is None:
            return None
        cached = self._cadences.get(agent)
        if cached is not None and (cached[0] is heartbeat or cached[0] == heartbeat):
            return cached[1]
        cadence = Cadence.of(heartbeat, self._fleet.name, agent)
        self._cadences[agent] = (heartbeat, cadence)
        return cadence

    def _planned(self, agent: str, cadence: Cadence | None, now: datetime) -> datetime | None:
        """The agent's next slot: from memory, else from SQLite, else planned from now."""
        key = cadence.key if cadence else None
        cached = self._plans.get(agent)
        if cached is not None and cached[0] == key:
            return cached[1]
        state = self.store.state(agent, now)
        next_run = state.next_run if cadence is not None and state.cadence == key else None
        if cadence is not None and next_run is None:
            next_run = cadence.first_slot(now)
        if (state.cadence, state.next_run) != (key, next_run):
            self.store.set_next_run(agent, key, next_run)
        self._plans[agent] = (key, next_run)
        return next_run

    def _run_slot(
        self, agent: str, cadence: Cadence, next_run: datetime, now: datetime
    ) -> tuple[TickResult, datetime]:
        catch_up = cadence.catch_up(next_run, now)
        # Advance first: a tick that fails must not be retried in a tight loop.
        self.store.set_next_run(agent, cadence.key, catch_up.next_slot)
        self._plans[agent] = (cadence.key, catch_up.next_slot)
        late_s = (now - catch_up.latest).total_seconds()
        missed = catch_up.count > 1 or late_s > Cadence.grace_s(catch_up)
        if not missed:
            return self.tick(agent, catch_up.latest), catch_up.next_slot
        runs = f"{catch_up.count} missed run{'s' if catch_up.count != 1 else ''}"
        heartbeat = self._fleet.config.heartbeat_of(agent)
        if heartbeat is not None and heartbeat.missed == "skip":
            started = self.clock.now()
            result = self._finish(
                agent,
                "schedule",
                catch_up.latest,
                started,
                "skipped",
                skipped="missed",
                detail=f"{runs} skipped",
            )
            return result, catch_up.next_slot
        return self.tick(agent, now, detail=f"coalesced {runs}"), catch_up.next_slot

    # --- one tick --------------------------------------------------------------------------

    def tick_now(self, agent: str) -> TickResult:
        """Run one tick for this agent now, outside its schedule (its next slot does not move)."""
        return self.tick(agent, self.clock.now(), trigger="manual")

    def tick(
        self, agent: str, at: datetime, trigger: TickTrigger = "schedule", detail: str = ""
    ) -> TickResult:
        with self._tick_lock:
            return self._tick(agent, at, trigger, detail)

    def _tick(self, agent: str, at: datetime, trigger: TickTrigger, detail: str) -> TickResult:
        started = self.clock.now()
        counts = self._inbox.counts(agent)
        if (skip := self._why_skip(agent, counts)) is not None:
            reason, why = skip
            return self._finish(agent, trigger, at, started, "skipped", skipped=reason, detail=why)
        checks = self._prechecks.evaluate(self._fleet.config, agent, at, counts)
        self._report_rule_problems(agent, checks)
        detail = "; ".join(filter(None, [detail, *self._notify_rules(agent, checks)]))
        if not checks.actionable:
            self._prechecks.commit(checks, fired=False)
            return self._finish(agent, trigger, at, started, "idle", detail=detail)
        woke = self.is_asleep(agent) and self.wake_for_work(agent, "heartbeat found work")
        item = self._heartbeat_item(agent, at, trigger, checks) if checks.needs_heartbeat_item else None
        self._prechecks.commit(checks, fired=item is not None)
        self.store.note_activity(agent, self.clock.now())
        return self._finish(
            agent, trigger, at, started, "run", item=item, checks=checks, woke=woke, detail=detail
        )

    def _why_skip(self, agent: str, counts: InboxCounts) -> tuple[SkipReason, str] | None:
        """Why this agent gets no tick now (held, over budget, busy), or None."""
        if (hold := self._controls.hold_of(agent)) is not None:
            return "held", f"{hold} by the operator"
        if self._spend_stops.stopped(agent, self.clock.now()):
            return "budget", "over budget: no work until its budget window resets"
        if counts.busy:
            return "busy", "working on an item" if counts.claimed else "a heartbeat is still queued"
        return None

    def _heartbeat_item(
        self, agent: str, at: datetime, trigger: TickTrigger, checks: PrecheckResult
    ) -> InboxItem:
        return self._inbox.submit(
            agent,
            ItemKind.HEARTBEAT,
            SCHEDULER_SENDER,
            checks.describe(),
            reasons=checks.reasons,
            idempotency_key=f"heartbeat:{at.isoformat()}" if trigger == "schedule" else None,
        )

    def _notify_rules(self, agent: str, checks: PrecheckResult) -> list[str]:
        """Hand the due `notify` rules' texts to the notifier; what became of each, for the record."""
        notes = []
        for rule in checks.notify_rules:
            assert rule.notify is not None
            channel, text = rule.notify
            refused = unapproved_rule(self._fleet.config, agent, channel, text)
            if refused is None:
                refused = (
                    "no notifier in this orchestrator"
                    if self._notifier is None
                    else self._notifier.queue_rule(agent, channel, text)
                )
            if refused is not None:
                log.warning("heartbeat rule %r of %s not sent: %s", rule.when, agent, refused)
            notes.append(f"notify {channel}: {'refused: ' + refused if refused else 'queued'}")
        return notes

    def _finish(
        self,
        agent: str,
        trigger: TickTrigger,
        at: datetime,
        started: datetime,
        outcome: TickOutcome,
        *,
        skipped: SkipReason | None = None,
        item: InboxItem | None = None,
        checks: PrecheckResult | None = None,
        woke: bool = False,
        detail: str = "",
    ) -> TickResult:
        reasons = checks.reasons if checks else []
        result = TickResult(
            agent=agent,
            run_id=uuid.uuid4().hex,
            outcome=outcome,
            trigger="manual" if trigger == "manual" else "schedule",
            scheduled_at=at,
            skipped=skipped,
            item_id=item.id if item else None,
            reasons=reasons,
            woke=woke,
            detail="; ".join([detail] * bool(detail) + [f"{r.kind}: {r.detail}" for r in reasons]),
        )
        config = self._fleet.config
        model = (config.heartbeat_model_of(agent) or config.model_of(agent)) if item else None
        self.runs.add_tick(
            run_id=result.run_id,
            agent=agent,
            trigger=result.trigger,
            outcome=outcome,
            detail=f"{skipped}: {result.detail}" if skipped else result.detail,
            scheduled_at=at,
            started_at=started,
            finished_at=self.clock.now(),
            model=model,
            item_id=result.item_id,
            files_changed=[c.path for c in checks.changes] if checks else None,
        )
        self.store.mark_tick(agent, at)
        self._publish(result)
        return result

    def _publish(self, result: TickResult) -> None:
        events = self._events
        common = {"run_id": result.run_id, "trigger": result.trigger, "detail": result.detail}
        if result.outcome == "idle":
            events.publish(EventType.HEARTBEAT_IDLE, agent=result.agent, **common)
        elif result.outcome == "skipped":
            events.publish(EventType.HEARTBEAT_SKIPPED, agent=result.agent, reason=result.skipped, **common)
        else:
            events.publish(
                EventType.HEARTBEAT_RUN,
                agent=result.agent,
                item_id=result.item_id,
                reasons=[r.model_dump() for r in result.reasons],
                woke=result.woke,
                **common,
            )

    def _report_rule_problems(self, agent: str, checks: PrecheckResult) -> None:
        """One event when the set of bad rules changes, not one per tick."""
        errors = [str(error) for error in checks.parsed.errors]
        digest = hashlib.sha256("\n".join(errors).encode()).hexdigest()[:16] if errors else ""
        if digest == self.store.state(agent, checks.at).rules_digest:
            return
        self.store.set_rules_digest(agent, digest)
        if errors:
            self._events.publish(RULES_INVALID_EVENT, agent=agent, source=checks.rules_source, errors=errors)

    # --- agent turns -----------------------------------------------------------------------

    def record_turn(self, record: RunRecord) -> bool:
        """Store a RunRecord posted by an agent, with the ledger's figures for its model calls;
        False if this id was recorded before."""
        record = self.runs.settled(record)
        stored = self.runs.add_turn(record)
        if stored:
            self.store.note_activity(record.agent, self.clock.now())
            self._request_replan(record.agent)
            self._events.publish(
                EventType.RUN_FINISHED,
                agent=record.agent,
                run_id=record.id,
                trigger=record.trigger,
                item_id=record.item_id,
                model=record.model,
                outcome=record.outcome.value,
                tokens_in=record.tokens_in,
                tokens_out=record.tokens_out,
                cost_usd=record.cost_usd,
                files_changed=record.files_changed,
            )
        return stored

    # --- sleep and wake --------------------------------------------------------------------

    def _wake_for_memory_jobs(self, agents: Iterable[str], now: datetime) -> list[datetime]:
        """Wake each sleeping agent whose memory jobs are due (it runs them where it lives,
        then sleeps again after its idle period); the due times still to come."""
        upcoming = []
        for agent in agents:
            due_at = self.memory_due.due_at(agent)
            if due_at is None or not self.is_asleep(agent):
                continue
            if due_at > now:
                upcoming.append(due_at)
                continue
            try:
                self.wake_for_work(agent, "memory jobs due")
            except BackendError as exc:
                log.error("waking %s for its memory jobs failed: %s", agent, exc)
            # The agent reports its next due time when it checks in; until then, not again.
            self.memory_due.note(agent, None)
        return upcoming

    def is_asleep(self, agent: str) -> bool:
        """The agent's desired state, as the lifecycle keeps it, is asleep."""
        return self.store.desired.is_asleep(agent)

    def wake(self, agent: str, reason: str = "operator") -> bool:
        """Start a sleeping agent now, for the operator who waits on it (blocking backend
        call); not held back by `max_awake`. False if it was not asleep."""
        woke = self._sleep_policy.wake(agent, reason, capped=False)
        if woke:
            self._request_replan(agent)
        return woke

    def wake_for_work(self, agent: str, reason: str) -> bool:
        """The way to wake an agent for work it has or will have (an inbox item, a due job):
        started now, or queued when `max_awake` agents are awake (the work waits in its inbox
        meanwhile, and the agent is woken when a place frees). Blocking backend call; call it
        off the event loop. True when the agent was asleep and has been started."""
        woke = self._sleep_policy.wake(agent, reason)
        if woke:
            self._request_replan(agent)
        elif agent in self._sleep_policy.queue:
            self._request_replan(agent)  # the next pass makes room sooner for those waiting
        return woke

    def wake_queue(self) -> list[QueuedWake]:
        """Agents with work waiting for a place among the awake ones, next first."""
        return self._sleep_policy.queue.snapshot()

    def put_idle_to_sleep(self, now: datetime | None = None) -> list[str]:
        """Put every agent idle past its period to sleep; those put to sleep now."""
        put_to_sleep, _ = self._sleep_policy.sweep(now or self.clock.now())
        return put_to_sleep

    def on_work_arrived(self, work: WorkArrived) -> None:
        """An item arrived for an agent from another sender than the scheduler: it counts as
        activity, and wakes a sleeping agent."""
        agent = work.agent
        self.store.note_activity(agent, self.clock.now())
        if not self.is_asleep(agent):
            return
        reason = work.reason
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.wake_for_work(agent, reason)  # called from a worker thread: blocking here is fine
            return
        # Called on the event loop (an async route): start the unit off the loop.
        future = loop.run_in_executor(None, self.wake_for_work, agent, reason)
        self._background.add(future)
        future.add_done_callback(self._background.discard)

    # --- status ----------------------------------------------------------------------------

    def status(self, agent: str) -> HeartbeatStatus:
        config = self._fleet.config
        now = self.clock.now()
        heartbeat = config.heartbeat_of(agent)
        state = self.store.state(agent, now)
        parsed, source = load_rules(self._paths, config, agent)
        marks = self.store.rule_marks(agent, [rule.key for rule in parsed.rules], now)
        rules = [
            RuleStatus(
                line=rule.line,
                when=rule.when,
                task=rule.task,
                last_done=marks[rule.key].last_done,
                next_due=rule.next_due(now, marks[rule.key].last_done, marks[rule.key].first_seen),
                due=rule.is_due(now, marks[rule.key].last_done, marks[rule.key].first_seen),
            )
            for rule in parsed.rules
        ]
        cadence = Cadence.of(heartbeat, self._fleet.name, agent) if heartbeat else None
        return HeartbeatStatus(
            agent=agent,
            schedule=cadence.describe() if cadence else None,
            missed=heartbeat.missed if heartbeat else None,
            next_run=state.next_run if cadence and state.cadence == cadence.key else None,
            last_tick=state.last_tick,
            hibernated=state.asleep,
            hibernate_after_s=config.hibernate_after_of(agent),
            heartbeat_model=config.heartbeat_model_of(agent),
            rules_source=source,
            rules=rules,
            errors=[RuleProblem(line=e.line, text=e.text, message=e.message) for e in parsed.errors],
        )

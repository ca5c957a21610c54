"""Budgets: per-agent and fleet-wide caps in dollars and tokens, per UTC day and UTC month.

A call reserves its estimate inside one BEGIN IMMEDIATE transaction that first sums the
window's spend (reservations of calls still in flight included) and refuses the call if the
estimate would pass any cap; two concurrent calls therefore cannot both slip under a limit.
The reservation is settled with the real figures afterwards. A warning event is published
once per window at 80% of a cap, and an exhausted event once per window when the cap is
reached or first refuses a call.

Who may not spend, and until when, is told to whoever watches (`watch_stops`: the scheduler, whose
ticks then read it as data): every agent's stop and the fleet's when the watch begins and when the
caps change, the charged agent's and the fleet's after each call is settled or refused. A stop
lasts until the exhausted windows reset; only new spend or new caps can stop an agent sooner.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from orchestrator.config.models import BudgetConfig, FleetConfig
from orchestrator.events import EventBus, EventType
from orchestrator.gateway.ledger import CallKind, Charge, Ledger, Spend, timestamp
from orchestrator.gateway.models import BudgetKind, BudgetScope, BudgetStatus, BudgetWindow
from orchestrator.state.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS gateway_budget_alerts (
    scope TEXT NOT NULL,
    subject TEXT NOT NULL,
    kind TEXT NOT NULL,
    window_start TEXT NOT NULL,
    level TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (scope, subject, kind, window_start, level)
);
"""
WARNING_FRACTION = 0.8
BUDGET_KINDS: tuple[BudgetKind, ...] = ("daily_usd", "monthly_usd", "daily_tokens", "monthly_tokens")

Clock = Callable[[], datetime]
StopWatcher = Callable[[str | None, datetime | None], None]
"""Told that an agent (None: the whole fleet) may not spend until a time; None: it may spend."""


def day_window(now: datetime) -> tuple[datetime, datetime]:
    start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=1)


def month_window(now: datetime) -> tuple[datetime, datetime]:
    start = now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return start, end


class BudgetExhausted(Exception):
    """A cap would be passed by this call; carries the window that refused it."""

    def __init__(self, agent: str, window: BudgetWindow, needed: float, worker: str | None = None) -> None:
        """`worker`: the agent whose call was refused, when `agent` is the peer paying for it."""
        self.agent = agent
        self.window = window
        self.needed = needed
        message = describe_refusal(agent, window, needed)
        if worker is not None and worker != agent:
            message = (
                f"{worker} works on an item {agent} sent, and {agent} pays for it (who asks pays): {message}"
            )
        super().__init__(message)


def _amount(kind: BudgetKind, value: float) -> str:
    return f"${value:.4f}" if kind.endswith("_usd") else f"{int(value)} tokens"


def describe_refusal(agent: str, window: BudgetWindow, needed: float) -> str:
    who = f"agent '{agent}'" if window.scope == "agent" else "the fleet"
    state = "is exhausted" if window.exhausted else "would be passed by this call"
    return (
        f"the {window.kind} budget of {who} {state}: spent {_amount(window.kind, window.spent)} "
        f"of {_amount(window.kind, window.limit)}"
        + ("" if window.exhausted else f" (this call needs about {_amount(window.kind, needed)})")
        + f"; resets at {window.resets_at.strftime('%Y-%m-%dT%H:%M:%SZ')}"
    )


@dataclass(frozen=True)
class Reservation:
    row_id: int
    agent: str
    """The agent charged: the one that made the call, or the peer paying for it."""
    estimate: Charge


class Budgets:
    def __init__(
        self, db: Database, ledger: Ledger, events: EventBus, config: Callable[[], FleetConfig], clock: Clock
    ) -> None:
        self._db = db
        self._ledger = ledger
        self._events = events
        self._config = config
        self._clock = clock
        self._stop_watchers: list[StopWatcher] = []
        db.ensure_schema(SCHEMA)

    # ------------------------------------------------------------------ reading

    def status(self, agent: str, conn: sqlite3.Connection | None = None) -> BudgetStatus:
        """Every configured cap that applies to the agent (its own, then the fleet's)."""
        config = self._config()
        now = self._clock()
        source: sqlite3.Connection | Database = conn if conn is not None else self._db
        own = config.budget_of(agent) if agent in config.agents else BudgetConfig()
        windows = self._windows("agent", own, agent, source, now)
        windows += self._windows("fleet", config.budget, None, source, now)
        return BudgetStatus(agent=agent, windows=windows)

    def fleet_windows(self) -> list[BudgetWindow]:
        """The fleet-wide caps and their use."""
        return self._windows("fleet", self._config().budget, None, self._db, self._clock())

    def _windows(
        self,
        scope: BudgetScope,
        caps: BudgetConfig,
        subject: str | None,
        source: sqlite3.Connection | Database,
        now: datetime,
    ) -> list[BudgetWindow]:
        found: list[BudgetWindow] = []
        spends: dict[tuple[datetime, datetime], Spend] = {}
        for kind in BUDGET_KINDS:
            limit = getattr(caps, kind)
            if limit is None:
                continue
            start, end = day_window(now) if kind.startswith("daily") else month_window(now)
            if (start, end) not in spends:
                spends[(start, end)] = Ledger.spend(source, subject, start, end)
            spend = spends[(start, end)]
            spent = spend.usd if kind.endswith("_usd") else float(spend.tokens)
            found.append(
                BudgetWindow(
                    scope=scope, kind=kind, limit=float(limit), spent=spent, window_start=start, resets_at=end
                )
            )
        return found

    def can_spend(self, agent: str) -> bool:
        return self.status(agent).can_spend

    # ------------------------------------------------------------------ stops

    def watch_stops(self, use: StopWatcher) -> None:
        """`use` is told every stop now, then each change (see the module's docstring)."""
        self._stop_watchers.append(use)
        self._tell_every_stop([use])

    def caps_changed(self) -> None:
        """The fleet's caps may differ (an apply): every stop is told again."""
        if self._stop_watchers:
            self._tell_every_stop(list(self._stop_watchers))

    def _tell_every_stop(self, watchers: list[StopWatcher]) -> None:
        config, now = self._config(), self._clock()
        _tell_stop(watchers, None, self._windows("fleet", config.budget, None, self._db, now))
        for agent in config.agents:
            windows = self._windows("agent", config.budget_of(agent), agent, self._db, now)
            _tell_stop(watchers, agent, windows)

    def _tell_stops_of(self, status: BudgetStatus) -> None:
        watchers = list(self._stop_watchers)
        _tell_stop(watchers, status.agent, [w for w in status.windows if w.scope == "agent"])
        _tell_stop(watchers, None, [w for w in status.windows if w.scope == "fleet"])

    def own_budget_left(self, agent: str) -> bool:
        """Whether none of the agent's own caps is exhausted (the fleet's are not looked at)."""
        return not any(window.exhausted for window in self.status(agent).windows if window.scope == "agent")

    # ------------------------------------------------------------------ charging

    def reserve(
        self,
        agent: str,
        *,
        kind: CallKind,
        model: str,
        provider: str,
        estimate: Charge,
        run_id: str | None = None,
        payer: str | None = None,
    ) -> Reservation:
        """Check every cap and write the reservation atomically, or raise BudgetExhausted.
        `payer`: the peer whose item the call works on; its caps are checked and it is charged,
        not `agent`."""
        refused: tuple[BudgetWindow, float] | None = None
        charged = payer or agent
        with self._db.transaction() as conn:
            status = self.status(charged, conn)
            for window in status.windows:
                needed = estimate.cost_usd if window.kind.endswith("_usd") else float(estimate.tokens)
                if window.exhausted or window.spent + needed > window.limit:
                    refused = (window, needed)
                    break
            else:
                row_id = Ledger.reserve(
                    conn,
                    at=self._clock(),
                    agent=agent,
                    kind=kind,
                    model=model,
                    provider=provider,
                    estimate=estimate,
                    run_id=run_id,
                    payer=payer,
                )
        if refused is not None:
            window, needed = refused
            self._tell_stops_of(status)
            self._alert(charged, window, "exhausted")
            raise BudgetExhausted(charged, window, needed, worker=agent)
        return Reservation(row_id, charged, estimate)

    def after_settle(self, agent: str) -> None:
        """Tell the stops and publish the once-per-window warning and exhaustion events the new
        spend calls for."""
        status = self.status(agent)
        self._tell_stops_of(status)
        for window in status.windows:
            if window.exhausted:
                self._alert(agent, window, "exhausted")
            if window.fraction >= WARNING_FRACTION:
                self._alert(agent, window, "warning")

    def _alert(self, agent: str, window: BudgetWindow, level: str) -> None:
        subject = agent if window.scope == "agent" else ""
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO gateway_budget_alerts(scope, subject, kind, window_start, level, at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                window.scope,
                subject,
                window.kind,
                timestamp(window.window_start),
                level,
                timestamp(self._clock()),
            ),
        )
        if cursor.rowcount != 1:
            return
        event = EventType.BUDGET_EXHAUSTED if level == "exhausted" else EventType.BUDGET_WARNING
        self._events.publish(
            event,
            agent=agent if window.scope == "agent" else None,
            scope=window.scope,
            kind=window.kind,
            spent=round(window.spent, 9),
            limit=window.limit,
            fraction=round(window.fraction, 4),
            resets_at=window.resets_at.isoformat(),
            triggered_by=agent,
        )


def _tell_stop(watchers: list[StopWatcher], subject: str | None, windows: list[BudgetWindow]) -> None:
    until = max((window.resets_at for window in windows if window.exhausted), default=None)
    for use in watchers:
        use(subject, until)

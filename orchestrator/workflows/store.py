"""Workflow runs and their steps in state.db: the tables `workflow_runs` and `workflow_steps`.

Every transition of a run is one write here, so an orchestrator killed at any point finds each
run as it left it. A run keeps the definition it started with (`definition`), so an `apply`
that changes or removes the workflow does not change a run already under way.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent_runtime.protocol import utcnow
from orchestrator.config.workflows import WorkflowConfig
from orchestrator.state.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS workflow_runs (
    id TEXT PRIMARY KEY,
    workflow TEXT NOT NULL,
    state TEXT NOT NULL,
    round INTEGER NOT NULL DEFAULT 0,
    trigger TEXT NOT NULL,
    input TEXT NOT NULL,
    definition TEXT NOT NULL,
    created_at TEXT NOT NULL,
    deadline_at TEXT NOT NULL,
    finished_at TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS workflow_runs_state ON workflow_runs(state, created_at);
CREATE TABLE IF NOT EXISTS workflow_steps (
    run_id TEXT NOT NULL REFERENCES workflow_runs(id) ON DELETE CASCADE,
    step TEXT NOT NULL,
    state TEXT NOT NULL,
    agent TEXT,
    attempt INTEGER NOT NULL DEFAULT 0,
    item_id TEXT,
    approval_id TEXT,
    queued_at TEXT,
    finished_at TEXT,
    not_before TEXT,
    output TEXT,
    text TEXT,
    error TEXT,
    agent_runs TEXT NOT NULL DEFAULT '[]',
    tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, step)
);
CREATE INDEX IF NOT EXISTS workflow_steps_state ON workflow_steps(state, not_before);
CREATE TABLE IF NOT EXISTS workflow_triggers (
    workflow TEXT PRIMARY KEY,
    fired_at TEXT NOT NULL
);
"""

RunState = Literal["running", "succeeded", "failed", "cancelled"]
StepState = Literal[
    "pending", "standby", "approval", "queued", "retry_wait", "done", "failed", "skipped", "cancelled"
]
FINISHED_STEP_STATES: frozenset[str] = frozenset({"done", "failed", "skipped", "cancelled"})
STEP_COLUMNS = frozenset(
    {
        "state",
        "attempt",
        "item_id",
        "approval_id",
        "queued_at",
        "finished_at",
        "not_before",
        "output",
        "text",
        "error",
        "agent_runs",
        "tokens",
        "cost_usd",
    }
)


class StepRun(BaseModel):
    """One step of one run as the operator sees it."""

    step: str
    state: StepState
    agent: str | None = None
    attempt: int = Field(default=0, description="Attempts made (the item sent, not counting redeliveries)")
    item_id: str | None = None
    approval_id: str | None = None
    queued_at: datetime | None = None
    finished_at: datetime | None = None
    not_before: datetime | None = Field(default=None, description="A retry waits until then")
    output: dict[str, Any] | None = None
    text: str | None = None
    error: str | None = None
    agent_runs: list[str] = Field(
        default_factory=list, description="The agent's run records, one per attempt"
    )
    tokens: int = 0
    cost_usd: float = 0.0


class WorkflowRun(BaseModel):
    id: str
    workflow: str
    state: RunState
    round: int = Field(default=0, description="How many times the run was retried")
    trigger: str
    input: dict[str, Any]
    created_at: datetime
    deadline_at: datetime
    finished_at: datetime | None = None
    error: str | None = None
    cost_usd: float = Field(default=0.0, description="The sum of its steps' spend")
    steps: list[StepRun] = Field(default_factory=list)

    def step(self, name: str) -> StepRun:
        return next(step for step in self.steps if step.step == name)


class WorkflowStore:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)

    def create(
        self,
        run_id: str,
        name: str,
        workflow: WorkflowConfig,
        run_input: dict[str, Any],
        trigger: str,
        deadline: datetime,
    ) -> None:
        now = utcnow().isoformat()
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO workflow_runs(id, workflow, state, trigger, input, definition, created_at, deadline_at)"
                " VALUES (?, ?, 'running', ?, ?, ?, ?, ?)",
                (
                    run_id,
                    name,
                    trigger,
                    json.dumps(run_input),
                    workflow.model_dump_json(),
                    now,
                    deadline.isoformat(),
                ),
            )
            conn.executemany(
                "INSERT INTO workflow_steps(run_id, step, state, agent) VALUES (?, ?, ?, ?)",
                [
                    (run_id, step, "standby" if step in workflow.handlers else "pending", config.agent)
                    for step, config in workflow.steps.items()
                ],
            )

    def definition(self, run_id: str) -> WorkflowConfig | None:
        row = self._db.query_one("SELECT definition FROM workflow_runs WHERE id = ?", (run_id,))
        return WorkflowConfig.model_validate_json(row["definition"]) if row is not None else None

    def running_ids(self) -> list[str]:
        rows = self._db.query("SELECT id FROM workflow_runs WHERE state = 'running' ORDER BY created_at")
        return [str(row["id"]) for row in rows]

    def get(self, run_id: str) -> WorkflowRun | None:
        row = self._db.query_one("SELECT * FROM workflow_runs WHERE id = ?", (run_id,))
        if row is None:
            return None
        steps = self._db.query("SELECT * FROM workflow_steps WHERE run_id = ? ORDER BY rowid", (run_id,))
        return _run(row, [_step(step) for step in steps])

    def step(self, run_id: str, step: str) -> StepRun:
        row = self._db.query_one("SELECT * FROM workflow_steps WHERE run_id = ? AND step = ?", (run_id, step))
        if row is None:
            raise LookupError(f"run {run_id} has no step {step!r}")
        return _step(row)

    def state(self, run_id: str) -> str | None:
        row = self._db.query_one("SELECT state FROM workflow_runs WHERE id = ?", (run_id,))
        return str(row["state"]) if row is not None else None

    def items_out(self) -> list[tuple[str, str]]:
        """(run id, item id) of every step of a running run whose item is out."""
        rows = self._db.query(
            "SELECT s.run_id, s.item_id FROM workflow_steps s JOIN workflow_runs r ON r.id = s.run_id"
            " WHERE s.state = 'queued' AND r.state = 'running' AND s.item_id IS NOT NULL"
        )
        return [(str(row["run_id"]), str(row["item_id"])) for row in rows]

    def retries_due(self, now: datetime) -> list[str]:
        """Running runs with a step whose retry wait is over."""
        rows = self._db.query(
            "SELECT DISTINCT s.run_id FROM workflow_steps s JOIN workflow_runs r ON r.id = s.run_id"
            " WHERE s.state = 'retry_wait' AND s.not_before <= ? AND r.state = 'running'",
            (now.isoformat(),),
        )
        return [str(row["run_id"]) for row in rows]

    def run_waiting_on(self, approval_id: str) -> str | None:
        """The run with a step waiting on this approval item, if any."""
        row = self._db.query_one(
            "SELECT run_id FROM workflow_steps WHERE approval_id = ? AND state = 'approval'", (approval_id,)
        )
        return str(row["run_id"]) if row is not None else None

    def find(self, prefix: str) -> list[str]:
        """Ids of runs starting with `prefix` (an operator types the first characters)."""
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._db.query(
            "SELECT id FROM workflow_runs WHERE id LIKE ? ESCAPE '\\' ORDER BY created_at DESC LIMIT 10",
            (escaped + "%",),
        )
        return [str(row["id"]) for row in rows]

    def recent(self, workflow: str | None = None, limit: int = 50) -> list[WorkflowRun]:
        """Newest first, with their steps."""
        if workflow is None:
            rows = self._db.query("SELECT * FROM workflow_runs ORDER BY created_at DESC LIMIT ?", (limit,))
        else:
            rows = self._db.query(
                "SELECT * FROM workflow_runs WHERE workflow = ? ORDER BY created_at DESC LIMIT ?",
                (workflow, limit),
            )
        ids = [str(row["id"]) for row in rows]
        steps: dict[str, list[StepRun]] = {run_id: [] for run_id in ids}
        if ids:
            marks = ",".join("?" for _ in ids)
            for step in self._db.query(
                f"SELECT * FROM workflow_steps WHERE run_id IN ({marks}) ORDER BY rowid", tuple(ids)
            ):
                steps[str(step["run_id"])].append(_step(step))
        return [_run(row, steps[str(row["id"])]) for row in rows]

    def count_by_state(self) -> dict[str, int]:
        rows = self._db.query("SELECT state, COUNT(*) AS n FROM workflow_runs GROUP BY state")
        return {str(row["state"]): int(row["n"]) for row in rows}

    def update_step(self, run_id: str, step: str, **values: Any) -> None:
        """Set columns of one step (`STEP_COLUMNS`); dicts and lists are stored as JSON."""
        unknown = set(values) - STEP_COLUMNS
        if unknown:
            raise ValueError(f"unknown step columns: {', '.join(sorted(unknown))}")
        encoded = {key: _encode(value) for key, value in values.items()}
        assignments = ", ".join(f"{key} = :{key}" for key in encoded)
        self._db.execute(
            f"UPDATE workflow_steps SET {assignments} WHERE run_id = :run_id AND step = :step",
            {**encoded, "run_id": run_id, "step": step},
        )

    def finish(self, run_id: str, state: RunState, error: str | None = None) -> bool:
        """Close a running run; False when it was not running."""
        cursor = self._db.execute(
            "UPDATE workflow_runs SET state = ?, error = ?, finished_at = ? WHERE id = ? AND state = 'running'",
            (state, error, utcnow().isoformat(), run_id),
        )
        return cursor.rowcount == 1

    def reopen(self, run_id: str, deadline: datetime, handlers: frozenset[str]) -> bool:
        """Run a finished run again from where it failed: the steps that did not finish well go back
        to waiting (handlers to standby), finished ones keep their results. False when running."""
        with self._db.transaction() as conn:
            cursor = conn.execute(
                "UPDATE workflow_runs SET state = 'running', round = round + 1, error = NULL, finished_at = NULL,"
                " deadline_at = ?"
                " WHERE id = ? AND state != 'running'",
                (deadline.isoformat(), run_id),
            )
            if cursor.rowcount != 1:
                return False
            conn.execute(
                "UPDATE workflow_steps SET state = 'pending', attempt = 0, item_id = NULL, approval_id = NULL,"
                " error = NULL, not_before = NULL, queued_at = NULL, finished_at = NULL"
                " WHERE run_id = ? AND state NOT IN ('done', 'standby')",
                (run_id,),
            )
            marks = ",".join("?" for _ in handlers)
            if handlers:
                conn.execute(
                    f"UPDATE workflow_steps SET state = 'standby' WHERE run_id = ? AND step IN ({marks})"
                    " AND state != 'done'",
                    (run_id, *sorted(handlers)),
                )
        return True

    def last_fired(self, workflow: str) -> datetime | None:
        """When the workflow's schedule last started a run (or was first seen)."""
        row = self._db.query_one("SELECT fired_at FROM workflow_triggers WHERE workflow = ?", (workflow,))
        return datetime.fromisoformat(row["fired_at"]) if row is not None else None

    def fired(self, workflow: str, at: datetime) -> None:
        self._db.execute(
            "INSERT INTO workflow_triggers(workflow, fired_at) VALUES (?, ?)"
            " ON CONFLICT(workflow) DO UPDATE SET fired_at = excluded.fired_at",
            (workflow, at.isoformat()),
        )

    def prune(self, before: datetime) -> int:
        """Drop runs finished before `before`, with their steps."""
        with self._db.transaction() as conn:
            conn.execute(
                "DELETE FROM workflow_steps WHERE run_id IN"
                " (SELECT id FROM workflow_runs WHERE state != 'running' AND finished_at < ?)",
                (before.isoformat(),),
            )
            cursor = conn.execute(
                "DELETE FROM workflow_runs WHERE state != 'running' AND finished_at < ?",
                (before.isoformat(),),
            )
        return int(cursor.rowcount)


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict | list):
        return json.dumps(value)
    return value


def _run(row: Any, steps: list[StepRun]) -> WorkflowRun:
    return WorkflowRun(
        id=row["id"],
        workflow=row["workflow"],
        state=row["state"],
        round=row["round"],
        trigger=row["trigger"],
        input=json.loads(row["input"]),
        created_at=row["created_at"],
        deadline_at=row["deadline_at"],
        finished_at=row["finished_at"],
        error=row["error"],
        cost_usd=round(sum(step.cost_usd for step in steps), 6),
        steps=steps,
    )


def _step(row: Any) -> StepRun:
    return StepRun(
        step=row["step"],
        state=row["state"],
        agent=row["agent"],
        attempt=row["attempt"],
        item_id=row["item_id"],
        approval_id=row["approval_id"],
        queued_at=row["queued_at"],
        finished_at=row["finished_at"],
        not_before=row["not_before"],
        output=json.loads(row["output"]) if row["output"] else None,
        text=row["text"],
        error=row["error"],
        agent_runs=json.loads(row["agent_runs"]),
        tokens=row["tokens"],
        cost_usd=row["cost_usd"],
    )

"""The ledger's run ids: added to a database made before they existed, and summed per run."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from orchestrator.gateway.ledger import SCHEMA, Charge, Ledger, run_spend
from orchestrator.state.db import Database

OLD_SCHEMA = SCHEMA.replace(",\n    run_id TEXT\n", "\n")
assert "run_id" not in OLD_SCHEMA


def _call(
    db: Database, ledger: Ledger, run_id: str | None, model: str, usd: float, agent: str = "alpha"
) -> None:
    with db.transaction() as conn:
        row = Ledger.reserve(
            conn,
            at=datetime(2030, 1, 1, tzinfo=UTC),
            agent=agent,
            kind="chat",
            model="fake:primary",
            provider="fake",
            estimate=Charge(100, 50, 1.0),
            run_id=run_id,
        )
    ledger.settle(
        row,
        model=model,
        provider="fake",
        charge=Charge(10, 5, usd),
        status="ok",
        latency_ms=1,
        estimated=True,
    )


def test_an_older_database_gets_the_run_column(tmp_path: Path) -> None:
    db = Database(tmp_path / "state.db")
    db.ensure_schema(OLD_SCHEMA)
    db.execute(
        "INSERT INTO gateway_usage(at, agent, kind, requested_model, model, provider, status) "
        "VALUES ('2030-01-01T00:00:00.000000Z', 'alpha', 'chat', 'test', 'test', 'test', 'ok')"
    )
    ledger = Ledger(db)
    [row] = ledger.rows("alpha")
    assert row.run_id is None
    _call(db, ledger, "run-1", "fake:primary", 0.25)
    assert ledger.rows("alpha")[0].run_id == "run-1"


def test_run_spend_sums_one_agents_calls_of_one_run(tmp_path: Path) -> None:
    db = Database(tmp_path / "state.db")
    ledger = Ledger(db)
    _call(db, ledger, "run-1", "fake:primary", 0.25)
    _call(db, ledger, "run-1", "fake:backup", 0.5)
    _call(db, ledger, "run-2", "fake:primary", 4.0)
    _call(db, ledger, "run-1", "fake:primary", 8.0, agent="beta")  # another agent's run of that id
    _call(db, ledger, None, "fake:primary", 16.0)
    spend = run_spend(db, "alpha", "run-1")
    assert spend is not None
    assert (spend.calls, spend.tokens_in, spend.tokens_out, spend.model) == (2, 20, 10, "fake:backup")
    assert spend.cost_usd == 0.75 and spend.estimated
    assert run_spend(db, "alpha", "run-unknown") is None

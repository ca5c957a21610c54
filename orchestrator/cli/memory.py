"""`flotilla memory ...`: inspect and correct an agent's long-term memory.

flotilla memory list AGENT [--status active|superseded|forgotten|all] [--category C] [--scope S] [-n N]
flotilla memory search AGENT "query" [-n N]
flotilla memory show AGENT ID
flotilla memory add AGENT "text" [--category C] [--subject KEY]
flotilla memory edit AGENT ID "text" [--category C]
flotilla memory forget AGENT ID [--with-restatements]
flotilla memory contradictions AGENT [--all] [--resolve ID --keep old|new]
flotilla memory status AGENT
flotilla memory accept-fresh AGENT
flotilla memory jobs AGENT
flotilla memory run AGENT JOB

Every command takes --json.
"""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path
from typing import Any

import click

from orchestrator.cli.common import client_for
from orchestrator.cli.errors import CliError
from orchestrator.cli.options import echo_json, fleet_file_option, json_option
from orchestrator.cli.terminal import echo, one_line


def _request(fleet_file: Path, method: str, path: str, body: Any = None, **params: Any) -> Any:
    """One call to the running orchestrator; the connection is closed right after."""
    client = client_for(fleet_file)
    try:
        if method == "GET":
            return client.get(path, **params)
        if method == "POST":
            return client.post(path, body)
        if method == "PUT":
            return client.put(path, body)
        return client.delete(path)
    finally:
        client.close()


def _base(agent: str) -> str:
    return f"/api/v1/agents/{agent}/memory"


def _fact_line(fact: dict[str, Any], score: float | None = None) -> str:
    scored = f"{score:.3f}  " if score is not None else ""
    status = "" if fact["status"] == "active" else f" [{fact['status']}]"
    text = fact["text"] or "(forgotten)"
    scope = f", scope {fact['scope']}" if fact.get("scope") else ""
    return one_line(
        f"{scored}#{fact['id']}{status}  {text}  ({fact['source']}, {fact['category']}, "
        f"{fact['updated_at'][:10]}{scope})"
    )


def _print_save(result: dict[str, Any], as_json: bool = False) -> None:
    if as_json:
        echo_json(result)
        return
    outcome = result["outcome"]
    if outcome == "superseded":
        echo(f"saved as #{result['fact_id']}, replacing #{result['replaced_id']}")
    elif outcome == "saved":
        echo(f"saved as #{result['fact_id']}")
    elif outcome == "merged":
        echo(f"already known as #{result['fact_id']}{': ' + result['detail'] if result['detail'] else ''}")
    elif outcome == "contradiction":
        echo(f"not saved: contradicts #{result['fact_id']} (contradiction {result['contradiction_id']})")
    else:
        echo(one_line(f"not saved: {result['detail'] or outcome}"))


@click.group()
def memory() -> None:
    """Inspect and correct an agent's long-term memory (facts, contradictions)."""


@memory.command("list")
@fleet_file_option
@click.option(
    "--status",
    type=click.Choice(["active", "superseded", "forgotten", "all"]),
    default="active",
    show_default=True,
)
@click.option("--category", default=None, help="Only this category.")
@click.option(
    "--scope",
    default=None,
    help="Only this scope: 'shared', or a person's principal (person:CHANNEL:USER). Default: every scope.",
)
@click.option("-n", "--limit", type=click.IntRange(1, 1000), default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.argument("agent")
def list_facts(
    fleet_file: Path,
    status: str,
    category: str | None,
    scope: str | None,
    limit: int,
    as_json: bool,
    agent: str,
) -> None:
    """List AGENT's facts, newest first, each with its scope when it is a person's."""
    found = _request(
        fleet_file,
        "GET",
        f"{_base(agent)}/facts",
        status=status,
        category=category,
        scope="" if scope == "shared" else scope,
        limit=limit,
    )
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    if not found["facts"]:
        echo("no facts")
    for fact in found["facts"]:
        echo(_fact_line(fact))


@memory.command()
@fleet_file_option
@click.option(
    "-n",
    "--limit",
    "-k",
    "k",
    type=click.IntRange(1, 100),
    default=10,
    show_default=True,
    help="How many results.",
)
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option("--history", is_flag=True, help="Facts with their superseded versions and when each was valid.")
@click.option(
    "--as-of",
    "as_of",
    metavar="TIME",
    help="The facts as they were at TIME (ISO 8601 date or time; no zone: UTC).",
)
@click.argument("agent")
@click.argument("query")
def search(
    fleet_file: Path, k: int, as_json: bool, history: bool, as_of: str | None, agent: str, query: str
) -> None:
    """Search AGENT's facts and episodes for QUERY."""
    if history or as_of:
        _search_history(fleet_file, agent, query, k, as_of, as_json)
        return
    found = _request(fleet_file, "GET", f"{_base(agent)}/search", q=query, k=k)
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    echo(f"mode: {found['mode']}")
    for hit in found["facts"]:
        echo(_fact_line(hit["fact"], hit["score"]))
    for hit in found["episodes"]:
        episode = hit["episode"]
        echo(
            one_line(
                f"{hit['score']:.3f}  episode {episode['id']} ({episode['start']} .. {episode['end']})  "
                f"{episode['summary']}"
            )
        )
    if not found["facts"] and not found["episodes"]:
        echo("nothing found")


def _search_history(
    fleet_file: Path, agent: str, query: str, k: int, as_of: str | None, as_json: bool
) -> None:
    found = _request(fleet_file, "GET", f"{_base(agent)}/history", q=query, k=k, as_of=as_of)
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    echo(f"mode: {found['mode']}")
    for version in found["versions"]:
        until = version["valid_until"][:19] if version["valid_until"] else "now"
        replaced = f", replaced by #{version['replaced_by']}" if version["replaced_by"] else ""
        echo(
            f"{_fact_line(version['fact'], version['score'])}  valid {version['valid_from'][:19]} .. {until}{replaced}"
        )
    if not found["versions"]:
        echo("nothing found")


@memory.command()
@fleet_file_option
@json_option
@click.argument("agent")
@click.argument("fact_id", type=int)
def show(fleet_file: Path, as_json: bool, agent: str, fact_id: int) -> None:
    """Show a fact with every version of its subject."""
    found = _request(fleet_file, "GET", f"{_base(agent)}/facts/{fact_id}")
    if as_json:
        echo_json(found)
        return
    fact = found["fact"]
    echo(_fact_line(fact))
    echo(
        f"  subject: {one_line(fact['subject'] or '-')}  salience: {fact['salience']:.2f}  accesses: {fact['access_count']}"
    )
    echo(one_line(f"  turns: {', '.join(fact['turn_ids']) or '-'}"))
    if len(found["history"]) > 1:
        echo("  versions:")
        for version in found["history"]:
            echo(f"    {_fact_line(version)}")


@memory.command()
@fleet_file_option
@click.option("--category", default=None)
@click.option("--subject", default=None, help="A stable key such as user.home_city.")
@json_option
@click.argument("agent")
@click.argument("text")
def add(
    fleet_file: Path, category: str | None, subject: str | None, as_json: bool, agent: str, text: str
) -> None:
    """Teach AGENT a fact as the operator."""
    body = {"text": text, "category": category, "subject": subject}
    _print_save(_request(fleet_file, "POST", f"{_base(agent)}/facts", body), as_json)


@memory.command()
@fleet_file_option
@click.option("--category", default=None, help="Move the fact to this category.")
@json_option
@click.argument("agent")
@click.argument("fact_id", type=int)
@click.argument("text")
def edit(fleet_file: Path, category: str | None, as_json: bool, agent: str, fact_id: int, text: str) -> None:
    """Correct fact FACT_ID of AGENT (the old wording stays as history)."""
    body = {"text": text, "category": category}
    _print_save(_request(fleet_file, "PUT", f"{_base(agent)}/facts/{fact_id}", body), as_json)


@memory.command()
@fleet_file_option
@json_option
@click.option(
    "--with-restatements",
    is_flag=True,
    help="Also forget the other facts that restate it (listed otherwise).",
)
@click.argument("agent")
@click.argument("fact_id", type=int)
def forget(fleet_file: Path, as_json: bool, with_restatements: bool, agent: str, fact_id: int) -> None:
    """Forget fact FACT_ID of AGENT for good (it will not be learned again)."""
    query = "?with_restatements=true" if with_restatements else ""
    found = _request(fleet_file, "DELETE", f"{_base(agent)}/facts/{fact_id}{query}")
    if as_json:
        echo_json(found)
        return
    ids = found["forgotten"]
    if not ids:
        echo(f"#{fact_id} was already forgotten")
    else:
        echo(f"forgot {', '.join(f'#{i}' for i in ids)}")
    kept = found.get("restatements") or []
    if kept:
        listed = ", ".join(f"#{i}" for i in kept)
        echo(f"still kept, restating it: {listed} (forget them with it: --with-restatements)")


@memory.command()
@fleet_file_option
@click.option("--all", "show_all", is_flag=True, help="Include resolved and dismissed ones.")
@click.option("--resolve", "resolve_id", type=int, default=None, help="Settle this contradiction.")
@click.option(
    "--keep", type=click.Choice(["old", "new"]), default=None, help="With --resolve: which fact stays."
)
@json_option
@click.argument("agent")
def contradictions(
    fleet_file: Path, show_all: bool, resolve_id: int | None, keep: str | None, as_json: bool, agent: str
) -> None:
    """List AGENT's pending contradictions, or settle one with --resolve ID --keep old|new."""
    if resolve_id is not None:
        if keep is None:
            raise CliError(
                "--resolve needs --keep old (the stored fact stays) or --keep new (the claim replaces it)"
            )
        done = _request(
            fleet_file, "POST", f"{_base(agent)}/contradictions/{resolve_id}/resolve", {"keep": keep}
        )
        if as_json:
            echo_json(done)
            return
        if done["resolution"] == "kept_new":
            echo(f"contradiction {resolve_id}: kept the new fact as #{done['new_fact_id']}")
        else:
            echo(f"contradiction {resolve_id}: kept #{done['fact_id']}")
        return
    if keep is not None:
        raise CliError("--keep is only used with --resolve ID")
    found = _request(
        fleet_file, "GET", f"{_base(agent)}/contradictions", status="all" if show_all else "pending"
    )
    if as_json:
        echo_json(found)
        return
    if not found["contradictions"]:
        echo("no contradictions")
    for item in found["contradictions"]:
        state = "" if item["status"] == "pending" else f" [{item['status']}]"
        echo(
            one_line(
                f"{item['id']}{state}  #{item['fact_id']} ({item['fact_source']}): "
                f"{item['fact_text'] or '(forgotten)'}"
            )
        )
        echo(one_line(f"    disputed by ({item['source']}): {item['text']}"))


@memory.command()
@fleet_file_option
@json_option
@click.argument("agent")
def status(fleet_file: Path, as_json: bool, agent: str) -> None:
    """Search mode, embedding model and counts of AGENT's memory."""
    found = _request(fleet_file, "GET", f"{_base(agent)}/status")
    if as_json:
        echo_json(found)
        return
    echo(
        f"mode: {found['mode']} ({found['embedding_model'] or 'no embedding model'}, {found['dimensions']} dims)"
    )
    echo(
        f"facts: {found['facts_active']} active, {found['facts_superseded']} superseded, "
        f"{found['facts_forgotten']} forgotten; missing vectors: {found['missing_vectors']}"
    )
    echo(f"episodes: {found['episodes']}; pending contradictions: {found['pending_contradictions']}")
    if found["last_error"]:
        echo(one_line(f"last error: {found['last_error']}"))
    if found.get("damaged"):
        echo(f"fresh store: memory.db {found['damaged']}")
        echo(
            f"  restore: flotilla down && flotilla restore BACKUP --agent {agent} --force && flotilla up\n"
            f"  or keep this store: flotilla memory accept-fresh {agent}"
        )


@memory.command("accept-fresh")
@fleet_file_option
@json_option
@click.argument("agent")
def accept_fresh(fleet_file: Path, as_json: bool, agent: str) -> None:
    """Keep the fresh store that replaced AGENT's damaged memory.db, then restart AGENT so that
    it searches its memory in full again (the damaged file stays in its storage's damaged/)."""
    found = _request(fleet_file, "POST", f"{_base(agent)}/accept-fresh")
    if found["accepted"]:
        with closing(client_for(fleet_file, timeout_s=120.0)) as client:
            client.post(f"/api/v1/agents/{agent}/restart")
    if as_json:
        echo_json(found)
    elif found["accepted"]:
        echo(f"{agent}: the fresh store is kept; {agent} restarted with full memory search")
    else:
        echo(f"{agent}: its memory.db is not a store that replaced a damaged one; nothing to accept")


def _run_line(run: dict[str, Any]) -> str:
    model = run["model"] or "no model"
    changes = "; ".join(run["changes"]) or "no change"
    return one_line(
        f"{run['started_at'][:19]}  {run['family']}/{run['job']:<13} {run['trigger']:<8} {run['outcome']:<7} "
        f"{model}  {changes}" + (f"  ({run['detail']})" if run["detail"] else "")
    )


@memory.command()
@fleet_file_option
@click.option("--json", "as_json", is_flag=True, help="Print the agent's answer as JSON")
@click.argument("agent")
def jobs(fleet_file: Path, as_json: bool, agent: str) -> None:
    """AGENT's memory jobs: run records (trigger, model, outcome, changes) and checkpoints."""
    found = _request(fleet_file, "GET", f"{_base(agent)}/jobs")
    if as_json:
        click.echo(json.dumps(found, indent=1))
        return
    echo(f"context strategy: {found['strategy']}; jobs: {', '.join(found['jobs'])}")
    for due in found.get("due") or []:
        echo(f"next due {due['family']}/{due['job']}: {due['next_due']}")
    for checkpoint in found["checkpoints"]:
        value = json.dumps(checkpoint["value"], sort_keys=True)
        echo(f"checkpoint {checkpoint['family']}/{checkpoint['job']}: {value}")
    if not found["runs"]:
        echo("no run yet")
    for run in found["runs"]:
        echo(_run_line(run))


@memory.command()
@fleet_file_option
@click.argument("agent")
@click.argument("job")
def run(fleet_file: Path, agent: str, job: str) -> None:
    """Run AGENT's memory JOB now (e.g. review, or cognition/consolidation) and print its record."""
    echo(_run_line(_request(fleet_file, "POST", f"{_base(agent)}/jobs/run", {"job": job})))

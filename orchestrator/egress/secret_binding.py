"""Secrets bound to hosts and to places in a request (`secrets.NAME.hosts` and `.places`).

A handle is filled in only where its secret allows (header, query, body), and the request, and
every redirect it follows, goes out only to a host the secret names: checked before each send,
so a value never leaves toward another host. A secret declared without hosts goes to any URL
the agent's policy allows (deprecated; `flotilla validate` warns).
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.config.secrets import SecretPlace, secret_handles
from orchestrator.egress.fetch import Outgoing, SendCheck
from orchestrator.egress.policy import PolicyRefused, Target
from orchestrator.egress.request import HttpRequestArguments
from orchestrator.secrets import SecretNotAllowed, SecretStore


@dataclass(frozen=True)
class FilledRequest:
    outgoing: Outgoing
    used: tuple[str, ...]
    """The secrets whose values the request holds."""


def fill_secrets(arguments: HttpRequestArguments, store: SecretStore, granted: list[str]) -> FilledRequest:
    """The request with its handles filled in; SecretError when a secret is not granted, not
    readable or not allowed in the place it is written."""
    places: list[tuple[SecretPlace, str]] = [("query", arguments.url)]
    places += [("header", value) for value in arguments.headers.values()]
    if arguments.body is not None:
        places.append(("body", arguments.body))
    used: dict[str, None] = {}
    for place, text in places:
        for name in secret_handles(text):
            _check_place(store, name, place)
            used[name] = None
    url = store.substitute(arguments.url, granted)
    headers = {name: store.substitute(value, granted) for name, value in arguments.headers.items()}
    body = store.substitute(arguments.body, granted).encode() if arguments.body is not None else None
    with_secrets = frozenset(name for name, value in arguments.headers.items() if secret_handles(value))
    outgoing = Outgoing(arguments.method, url, headers, body, with_secrets)
    return FilledRequest(outgoing, tuple(used))


def _check_place(store: SecretStore, name: str, place: SecretPlace) -> None:
    source = store.source(name)
    if source is None:
        return  # substitute() names the undeclared secret
    allowed = source.allowed_places()
    if place not in allowed:
        where = "the URL" if place == "query" else f"the {place}"
        raise SecretNotAllowed(
            f"secret {name!r} may not be put in {where} (secrets.{name}.places: {', '.join(allowed)})"
        )


def host_check(store: SecretStore, used: tuple[str, ...]) -> SendCheck | None:
    """A check refusing a request that holds a value of `used` toward a host its secret does not
    name; None when no secret used is bound to hosts."""
    bound = [(name, source) for name in used if (source := store.source(name)) and source.hosts]
    if not bound:
        return None

    def check(request: Outgoing, target: Target) -> None:
        for name, source in bound:
            if source.allows_host(target.host) or not _holds(request, store.value(name)):
                continue
            raise PolicyRefused(
                f"secrets.{name}.hosts: the secret goes only to {', '.join(source.hosts or [])}, "
                f"not to {target.host}"
            )

    return check


def _holds(request: Outgoing, value: str) -> bool:
    if value in request.url or any(value in text for text in request.headers.values()):
        return True
    return request.body is not None and value.encode() in request.body

"""Listing containers: inspect data is fetched again only when `docker ps` shows a change."""

from __future__ import annotations

from typing import Any

from orchestrator.backends.docker_listing import InspectCache, inspect_key, summary_key


def summary(container_id: str, state: str, status: str) -> dict[str, Any]:
    return {"Id": container_id, "State": state, "Status": status}


def inspected(container_id: str, state: str, health: str | None = None) -> dict[str, Any]:
    detail: dict[str, Any] = {"Status": state}
    if health is not None:
        detail["Health"] = {"Status": health}
    return {"Id": container_id, "State": detail}


class FakeDaemon:
    def __init__(self) -> None:
        self.containers: dict[str, dict[str, Any]] = {}
        self.inspections: list[str] = []

    def inspect(self, container_id: str) -> dict[str, Any] | None:
        self.inspections.append(container_id)
        return self.containers.get(container_id)


def test_the_keys_of_ps_and_inspect_data_agree() -> None:
    assert summary_key(summary("a", "running", "Up 3 seconds (healthy)")) == ("a", "running", "healthy")
    assert inspect_key(inspected("a", "running", "healthy")) == ("a", "running", "healthy")
    assert summary_key(summary("a", "running", "Up 1 second (health: starting)"))[2] == "starting"
    assert summary_key(summary("a", "exited", "Exited (137) 2 seconds ago")) == ("a", "exited", "")
    assert inspect_key(inspected("a", "exited")) == ("a", "exited", "")


def test_unchanged_containers_are_not_inspected_again() -> None:
    daemon = FakeDaemon()
    cache = InspectCache(daemon.inspect)
    daemon.containers = {"a": inspected("a", "running"), "b": inspected("b", "created")}
    listing = [summary("a", "running", "Up 2 seconds"), summary("b", "created", "Created")]

    assert [attrs["Id"] for attrs in cache.resolve(listing)] == ["a", "b"]
    assert cache.resolve(listing) == [daemon.containers["a"], daemon.containers["b"]]
    assert daemon.inspections == ["a", "b"]

    # b started, a became healthy: both are inspected again, once.
    daemon.containers = {"a": inspected("a", "running", "healthy"), "b": inspected("b", "running")}
    changed = [summary("a", "running", "Up 5 seconds (healthy)"), summary("b", "running", "Up 1 second")]
    assert [inspect_key(attrs) for attrs in cache.resolve(changed)] == [
        ("a", "running", "healthy"),
        ("b", "running", ""),
    ]
    cache.resolve(changed)
    assert daemon.inspections == ["a", "b", "a", "b"]


def test_a_forgotten_or_vanished_container_is_handled() -> None:
    daemon = FakeDaemon()
    cache = InspectCache(daemon.inspect)
    daemon.containers = {"a": inspected("a", "running")}
    listing = [summary("a", "running", "Up 2 seconds")]
    cache.resolve(listing)
    cache.forget("a")  # e.g. restarted by this process between two listings
    cache.resolve(listing)
    assert daemon.inspections == ["a", "a"]

    daemon.containers = {}  # removed between `docker ps` and `docker inspect`
    assert cache.resolve([summary("a", "exited", "Exited (0) 1 second ago")]) == []


def test_a_container_remembered_when_made_is_not_inspected() -> None:
    daemon = FakeDaemon()
    cache = InspectCache(daemon.inspect)
    cache.remember(inspected("a", "created"))
    assert [inspect_key(attrs) for attrs in cache.resolve([summary("a", "created", "Created")])] == [
        ("a", "created", "")
    ]
    assert daemon.inspections == []

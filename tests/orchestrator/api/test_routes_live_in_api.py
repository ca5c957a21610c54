"""Every HTTP and WebSocket route lives under orchestrator/api/: no other module of the product
makes an APIRouter, registers a route or decorates a function as one.

Read with `ast`, so nothing is imported. orchestrator/testing/ is left out: its fake upstream
provider is a server of its own that tests start, not a route of the orchestrator.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
API = ROOT / "orchestrator" / "api"
NOT_THE_ORCHESTRATOR = (ROOT / "orchestrator" / "testing",)
PACKAGES = ("orchestrator", "agent_runtime")

ROUTE_DECORATORS = frozenset(
    {"get", "post", "put", "patch", "delete", "head", "options", "trace", "api_route", "route", "websocket"}
)
ROUTE_CALLS = frozenset(
    {
        "APIRouter",
        "add_api_route",
        "add_api_websocket_route",
        "add_route",
        "add_websocket_route",
        "include_router",
    }
)


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def routes_defined(source: str) -> list[str]:
    """What in `source` defines a route or a router, as "line: what", in the order of the lines."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                called = decorator.func if isinstance(decorator, ast.Call) else None
                if (
                    isinstance(called, ast.Attribute)
                    and called.attr in ROUTE_DECORATORS
                    and decorator.args  # a path: `@router.get("/x")`, not `@cache.get`
                ):
                    found.append((decorator.lineno, f"@{ast.unparse(called)}(...) on {node.name}"))
        elif isinstance(node, ast.Call) and _name(node.func) in ROUTE_CALLS:
            found.append((node.lineno, f"{ast.unparse(node.func)}(...)"))
    return [f"{line}: {what}" for line, what in sorted(found)]


def _modules() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def _outside_api(path: Path) -> bool:
    return not path.is_relative_to(API) and not any(path.is_relative_to(d) for d in NOT_THE_ORCHESTRATOR)


def test_no_module_outside_orchestrator_api_defines_a_route() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{where}"
        for path in _modules()
        if _outside_api(path)
        for where in routes_defined(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, "routes belong under orchestrator/api/:\n" + "\n".join(offenders)


def test_the_check_sees_the_routes_that_are_there() -> None:
    api_modules = [path for path in _modules() if path.is_relative_to(API)]
    with_routes = {
        path.relative_to(API).as_posix() for path in api_modules if routes_defined(path.read_text())
    }
    assert {"agent/routes.py", "agent/link.py", "gateway.py", "operator/fleet.py", "app.py"} <= with_routes


def test_the_check_knows_each_way_to_declare_a_route() -> None:
    source = """
router = APIRouter(prefix="/x")
app.add_api_route("/y", handler)
@router.get("/a")
async def a() -> None: ...
@app.websocket("/b")
async def b() -> None: ...
@cache.get
def not_a_route() -> None: ...
"""
    assert [found.split(":")[0] for found in routes_defined(source)] == ["2", "3", "4", "6"]

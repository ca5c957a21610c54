"""Routes an agent calls for the tools the orchestrator runs for it (orchestrator.host_tools)."""

from __future__ import annotations

from fastapi import APIRouter

from agent_runtime.protocol import (
    AGENT_API_PREFIX,
    OrchestratorToolCall,
    OrchestratorToolResult,
    OrchestratorTools,
)
from orchestrator.api.agent.peers import approval_rules
from orchestrator.api.deps import AgentDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.approvals import ApprovalStore
from orchestrator.backends.docker import connect_docker
from orchestrator.browser import BrowserContextParts, BrowserSessions, BrowserTools
from orchestrator.browser.image import browser_image
from orchestrator.browser.screenshots import ScreenshotPlace, ScreenshotShelf
from orchestrator.channels import NotifyTools
from orchestrator.config.browser import BrowserPolicy
from orchestrator.config.egress import HttpPolicy
from orchestrator.egress import HttpRequestTool
from orchestrator.host_tools import HostToolCatalog, HostToolProvider, HostToolRefused
from orchestrator.host_tools.sandbox import ExecContext, ExecTool
from orchestrator.mcp_http import OrchestratorMcpCalls
from orchestrator.secrets import SecretStore
from orchestrator.services import Services
from orchestrator.web_search import WebSearchTool

router = APIRouter(prefix=AGENT_API_PREFIX, tags=["agent"])


def _catalog(services: Services, agent: str) -> HostToolCatalog:
    fleet = services.fleet.config
    if agent not in fleet.agents:
        raise ApiError(404, "not_found", f"agent {agent!r} is no longer part of the fleet")
    tools = fleet.agents[agent].tools
    approvals = ApprovalStore(services.db, services.events)
    secrets = services.fleet_view.secrets()

    def charge_refusal() -> None:
        # A refused call leaves an event and a log line: it is paid for like one (429 past the rate).
        services.fair_share.admit_event(agent)

    providers: list[HostToolProvider] = [
        OrchestratorMcpCalls(agent, tools, services.events, secrets=secrets),
        ExecTool(_exec_context(services, agent, approvals), charge_refusal),
        NotifyTools(agent, services.notifier, charge_refusal),
    ]
    if tools.http is not None:
        providers.append(
            HttpRequestTool(
                agent,
                tools,
                secrets=secrets,
                approvals=approvals,
                events=services.events,
                db=services.db,
                charge_refusal=charge_refusal,
            )
        )
    if tools.http is not None and tools.browser is not None:
        providers.append(BrowserTools(_browser_parts(services, agent, tools.http, tools.browser, secrets)))
    if tools.http is not None and tools.search is not None:
        providers.append(
            WebSearchTool(
                agent, tools.search, tools.http, secrets=secrets, events=services.events, db=services.db
            )
        )
    return HostToolCatalog(agent, providers)


def _browser_parts(
    services: Services, agent: str, http: HttpPolicy, browser: BrowserPolicy, secrets: SecretStore
) -> BrowserContextParts:
    fleet = services.fleet.config
    if services.browsers is None:
        services.browsers = BrowserSessions(services.db, connect_docker)
    policies = {name: a.tools.browser for name, a in fleet.agents.items() if a.tools.browser is not None}
    return BrowserContextParts(
        fleet=services.fleet.name,
        agent=agent,
        image=browser_image(),
        http=http,
        browser=browser,
        sessions=services.browsers,
        secrets=secrets,
        events=services.events,
        screenshots=ScreenshotShelf(
            ScreenshotPlace(services.paths.agent_dir, policies, saved=services.workspaces.push_binary)
        ),
    )


def _exec_context(services: Services, agent: str, approvals: ApprovalStore) -> ExecContext:
    return ExecContext(
        fleet=services.fleet.name,
        agent=agent,
        image=services.manager.image,
        tools=services.fleet.config.agents[agent].tools,
        backend=services.backend,
        workspaces=services.workspaces,
        approvals=approvals,
        events=services.events,
        staging_root=services.paths.root / "sandbox",
    )


@router.get("/tools")
async def list_tools(services: ServicesDep, agent: AgentDep) -> OrchestratorTools:
    """The tools the orchestrator runs for this agent (allow-lists applied), and what was not reached."""
    return await _catalog(services, agent.name).list()


@router.post("/tools/call")
async def call_tool(
    body: OrchestratorToolCall, services: ServicesDep, agent: AgentDep
) -> OrchestratorToolResult:
    """Run one tool. 403: not allowed (policy, allow-list, approval, budget); a failed call: ok=false.
    Approval is checked here, for every tool the orchestrator runs, before any provider sees it."""
    approval_rules(services, agent.name).check_tool_call(body.name, body.arguments, body.item_id)
    try:
        return await _catalog(services, agent.name).call(body)
    except HostToolRefused as refused:
        raise ApiError(403, "forbidden", str(refused)) from None

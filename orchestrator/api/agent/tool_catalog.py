"""The catalog of the tools the orchestrator runs for one agent (orchestrator.host_tools), built
from the fleet in force: which providers, with which policies and secrets."""

from __future__ import annotations

from orchestrator.api.errors import ApiError
from orchestrator.approvals import ApprovalStore
from orchestrator.backends.docker import connect_docker
from orchestrator.browser import BrowserContextParts, BrowserSessions, BrowserTools
from orchestrator.browser.image import browser_image
from orchestrator.browser.screenshots import ScreenshotPlace, ScreenshotShelf
from orchestrator.config.browser import BrowserPolicy
from orchestrator.config.egress import HttpPolicy
from orchestrator.egress import HttpRequestTool
from orchestrator.host_tools import HostToolCatalog, HostToolProvider
from orchestrator.host_tools.sandbox import ExecContext, ExecTool
from orchestrator.mcp_http import OrchestratorMcpCalls
from orchestrator.notifications import NotifyTools
from orchestrator.secrets import SecretStore
from orchestrator.services import Services
from orchestrator.web_search import WebSearchTool


def tool_catalog(services: Services, agent: str) -> HostToolCatalog:
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

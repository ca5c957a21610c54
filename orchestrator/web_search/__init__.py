"""The `web_search` tool: searches the orchestrator makes for an agent at the provider its
`tools.search` declares (SearXNG, Brave or any endpoint answering results as JSON), sent under the
agent's `tools.http` policy like any `http_request` and counted in its daily budget.

Must not import the HTTP layer (`orchestrator.api`).
"""

from orchestrator.web_search.tool import WEB_SEARCH, WEB_SEARCHED, WebSearchTool

__all__ = ["WEB_SEARCH", "WEB_SEARCHED", "WebSearchTool"]

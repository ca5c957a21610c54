"""The browser tools (`browser_*`): a headless Chromium per session in a throwaway sandbox, driven
by the orchestrator over CDP, whose every request leaves through an egress proxy holding the
agent's `tools.http` policy.

Owns the sandbox's lifecycle (`sandbox`), the proxy (`proxy`), the driving of a page (`session`),
the sessions of the fleet (`sessions`), the tools' checks and records (`tools`), the screenshots
kept for the operator (`screenshots`) and the browser image (`image`). The program that runs in
the sandbox is `container_main` (standard library only). Must not import the HTTP layer
(`orchestrator.api`).
"""

from orchestrator.browser.sessions import BrowserSessions
from orchestrator.browser.tools import BROWSER_ACTION, BROWSER_REFUSED, BrowserContextParts, BrowserTools

__all__ = ["BROWSER_ACTION", "BROWSER_REFUSED", "BrowserContextParts", "BrowserSessions", "BrowserTools"]

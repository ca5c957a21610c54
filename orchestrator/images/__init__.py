"""The agent image: its name (`names`, light enough for any module), building it offline from the
Debian base and a wheelhouse (`build`), and a fleet's extension with MCP packages (`extension`).

Must not import the fleet, the agents, the HTTP layer, the CLI or the composition root.
"""

# The modules other packages may import; the rest are this package's own.
__all__ = ["build", "extension", "names"]

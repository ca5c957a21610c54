"""broker"""

# The modules other packages may import; the rest are this package's own.
__all__ = ["broker", "contracts_check", "inbox", "messages", "repair", "request_trace"]

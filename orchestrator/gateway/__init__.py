"""gateway"""

# The modules other packages may import; the rest are this package's own.
__all__ = [
    "budget",
    "embedding",
    "errors",
    "ledger",
    "models",
    "prices",
    "providers",
    "retry",
    "service",
    "settled_answers",
    "tokens",
]

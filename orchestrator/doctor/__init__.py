"""`flotilla doctor`: what is wrong with a fleet on this machine, and the command that fixes it."""

# The modules other packages may import; the rest are this package's own.
__all__ = ["live_checks", "models", "run"]

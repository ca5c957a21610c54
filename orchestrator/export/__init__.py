"""Manifests that run a fleet on engines Flotilla does not drive itself."""

# The modules other packages may import; the rest are this package's own.
__all__ = ["kubernetes"]

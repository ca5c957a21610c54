"""Manifests that run a fleet on engines Flotilla does not drive itself."""

"""The agent image's default name, kept apart from the image builder so that light modules can
name it without importing the Docker SDK."""

import os

# FLOTILLA_IMAGE lets two checkouts on one machine keep images of their own.
DEFAULT_IMAGE = os.environ.get("FLOTILLA_IMAGE", "flotilla/agent:latest")

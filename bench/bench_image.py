"""The agent image: size, base size, the up-to-date check and (full runs) a rebuild from scratch.

Full runs rebuild `flotilla/agent:latest` without the layer cache (base image and wheelhouse
reused), which is what a source change costs at worst.
"""

from __future__ import annotations

import time

from orchestrator.backends.docker import connect_docker
from orchestrator.config.units import format_bytes
from orchestrator.images.build import BASE_TAG, DEFAULT_TAG, build_image

Row = dict[str, str]


def _row(metric: str, value: str, target: str = "") -> Row:
    return {"benchmark": "image", "metric": metric, "value": value, "target": target}


def run(quick: bool) -> list[Row]:
    client = connect_docker()
    rows: list[Row] = []
    if not quick:
        rebuilt = build_image(tag=DEFAULT_TAG, force=True, client=client)
        rows.append(_row("rebuild without layer cache", f"{rebuilt.duration_s:.1f} s"))
    first = build_image(tag=DEFAULT_TAG, client=client)
    # The source may change under a running benchmark: time the first call that skips.
    for _ in range(3):
        started = time.monotonic()
        again = build_image(tag=DEFAULT_TAG, client=client)
        check_s = time.monotonic() - started
        if not again.built:
            break
    base = client.images.get(BASE_TAG)
    rows += [
        _row("agent image size", format_bytes(again.size_bytes)),
        _row("base image size", format_bytes(int(base.attrs.get("Size", 0)))),
        _row("up-to-date check (no build)", f"{check_s * 1000:.0f} ms"),
    ]
    if first.built:
        rows.append(_row("build after source change (layer cache)", f"{first.duration_s:.1f} s"))
    client.close()
    return rows

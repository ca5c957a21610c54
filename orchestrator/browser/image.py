"""The browser sandbox image, built offline and only for a fleet where some agent has
`tools.browser`, in two stages:

- its root, `flotilla/browser-root:bookworm`: Debian with Debian's headless Chromium, made by
  `images/browser/build.sh` (debootstrap, Debian's packages installed from the host, then
  `docker import`), labelled with the script's hash and remade only when the script changes;
- the image itself: the root plus the sandbox program (`container_main`), a local `docker build`
  that reaches no registry, labelled with the hash of its inputs and skipped when it exists.

Its tag follows the agent image's (`flotilla/agent:X` -> `flotilla/browser:X`) unless
FLOTILLA_BROWSER_IMAGE names one.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

from orchestrator.backends.docker import connect_docker
from orchestrator.images.names import DEFAULT_IMAGE

BUILD_SCRIPT = Path("images/browser/build.sh")
PROGRAM = Path(__file__).with_name("container_main.py")
ROOT_TAG = "flotilla/browser-root:bookworm"
LABEL_INPUTS_HASH = "io.flotilla.inputs-hash"
LABEL_ROOT_RECIPE = "io.flotilla.base-recipe"
RECIPE_VERSION = "1"
ROOT_BUILD_TIMEOUT_S = 1800
PROGRAM_PATH = "/opt/flotilla/container_main.py"
POLICY_PATH = "/etc/chromium/policies/managed/flotilla.json"
# Chromium's enterprise policies: none of its own calls home, so that the egress proxy sees only
# what pages ask for (flags alone leave sign-in, GCM and variations requests).
CHROMIUM_POLICY = {
    "BrowserSignin": 0,
    "SyncDisabled": True,
    "MetricsReportingEnabled": False,
    "SafeBrowsingProtectionLevel": 0,
    "TranslateEnabled": False,
    "SearchSuggestEnabled": False,
    "NetworkPredictionOptions": 2,
    "UrlKeyedAnonymizedDataCollectionEnabled": False,
    "SpellCheckServiceEnabled": False,
    "ComponentUpdatesEnabled": False,
    "BackgroundModeEnabled": False,
    "AlternateErrorPagesEnabled": False,
    "AutofillAddressEnabled": False,
    "AutofillCreditCardEnabled": False,
    "PasswordManagerEnabled": False,
    "DefaultNotificationsSetting": 2,
    "PromotionsEnabled": False,
    "DnsOverHttpsMode": "off",
}
BROWSER_UID = 10001


class BrowserImageError(Exception):
    """The browser image could not be built; the message is meant for the operator."""


@dataclass(frozen=True)
class BrowserImage:
    tag: str
    built: bool
    size_bytes: int
    duration_s: float


def browser_image() -> str:
    named = os.environ.get("FLOTILLA_BROWSER_IMAGE")
    if named:
        return named
    _, _, version = DEFAULT_IMAGE.rpartition(":")
    return f"flotilla/browser:{version or 'latest'}"


def _digest(*parts: bytes) -> str:
    digest = hashlib.sha256(RECIPE_VERSION.encode())
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:32]


def ensure_browser_image(repo_root: Path, tag: str | None = None, force: bool = False) -> BrowserImage:
    """The browser image under `tag`, built when missing or made from other inputs."""
    tag = tag or browser_image()
    started = time.monotonic()
    script = (repo_root / BUILD_SCRIPT).read_bytes()
    program = PROGRAM.read_bytes()
    root_recipe = _digest(script)
    wanted = _digest(script, program, _dockerfile("", "").encode(), _policy())
    client = connect_docker()
    try:
        if not force:
            size = _labelled(client, tag, LABEL_INPUTS_HASH, wanted)
            if size is not None:
                return BrowserImage(tag, False, size, 0.0)
        if force or _labelled(client, ROOT_TAG, LABEL_ROOT_RECIPE, root_recipe) is None:
            _build_root(repo_root, root_recipe)
        _build_image(client, tag, program, wanted)
        size = _labelled(client, tag, LABEL_INPUTS_HASH, wanted)
        if size is None:
            raise BrowserImageError(f"the build ended but {tag} does not carry the expected inputs hash")
        return BrowserImage(tag, True, size, time.monotonic() - started)
    finally:
        client.close()


def _labelled(client: docker.DockerClient, tag: str, label: str, wanted: str) -> int | None:
    """The image's size when `tag` exists with `label` set to `wanted`."""
    try:
        attrs = client.api.inspect_image(tag)
    except docker.errors.ImageNotFound:
        return None
    labels = (attrs.get("Config") or {}).get("Labels") or {}
    return int(attrs.get("Size") or 0) if labels.get(label) == wanted else None


def _build_root(repo_root: Path, recipe: str) -> None:
    script = repo_root / BUILD_SCRIPT
    try:
        done = subprocess.run(
            [str(script), ROOT_TAG],
            env={**os.environ, "FLOTILLA_RECIPE_HASH": recipe},
            capture_output=True,
            text=True,
            timeout=ROOT_BUILD_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as failed:
        raise BrowserImageError(f"{script} could not run: {failed}") from None
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-10:])
        raise BrowserImageError(f"{script} failed:\n{tail}")


def _dockerfile(root: str, inputs_hash: str) -> str:
    return (
        f"FROM {root}\n"
        f"COPY container_main.py {PROGRAM_PATH}\n"
        f"COPY policy.json {POLICY_PATH}\n"
        f"USER {BROWSER_UID}:{BROWSER_UID}\n"
        "ENV HOME=/tmp\n"
        f'CMD ["python3", "-I", "{PROGRAM_PATH}"]\n'
        f"LABEL io.flotilla.component=browser {LABEL_INPUTS_HASH}={inputs_hash}\n"
    )


def _policy() -> bytes:
    return json.dumps(CHROMIUM_POLICY, indent=2, sort_keys=True).encode()


def _build_image(client: docker.DockerClient, tag: str, program: bytes, inputs_hash: str) -> None:
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        for name, data in (
            ("Dockerfile", _dockerfile(ROOT_TAG, inputs_hash).encode()),
            ("container_main.py", program),
            ("policy.json", _policy()),
        ):
            entry = tarfile.TarInfo(name)
            entry.size = len(data)
            entry.mode = 0o644
            tar.addfile(entry, io.BytesIO(data))
    context.seek(0)
    try:
        client.images.build(fileobj=context, custom_context=True, tag=tag, rm=True, pull=False)
    except (docker.errors.BuildError, docker.errors.APIError) as failed:
        raise BrowserImageError(f"building {tag} from {ROOT_TAG} failed: {failed}") from None

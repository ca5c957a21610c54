#!/usr/bin/env bash
# Build the root of the browser sandbox image: Debian bookworm with headless Chromium, fonts and
# python3 (which runs the sandbox program, added on top by `flotilla image build --browser`),
# made on the host with debootstrap and apt and imported into Docker, so no registry and no
# package index is reached from a container.
#
# Usage: images/browser/build.sh TAG
# Environment:
#   FLOTILLA_DEBIAN_MIRROR  Debian mirror URL; default http://deb.debian.org/debian
#   FLOTILLA_RECIPE_HASH    recorded as the image label io.flotilla.base-recipe
#
# Needs root (debootstrap), debootstrap and docker.
set -euo pipefail

TAG="${1:?usage: build.sh TAG}"
SUITE=bookworm
MIRROR="${FLOTILLA_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
BROWSER_UID=10001

fail() {
    echo "browser image: $*" >&2
    exit 1
}

[[ "$(id -u)" == 0 ]] || fail "must run as root (debootstrap needs it)"
command -v debootstrap >/dev/null || fail "debootstrap is not installed (apt-get install debootstrap)"
docker info >/dev/null 2>&1 || fail "no Docker daemon answers; start it and retry"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/flotilla-browser.XXXXXX")"
trap 'rm -rf --one-file-system "$WORK"' EXIT
ROOTFS="$WORK/rootfs"

echo "==> debootstrap $SUITE from $MIRROR"
debootstrap --variant=minbase --include=python3,ca-certificates "$SUITE" "$ROOTFS" "$MIRROR" \
    || fail "debootstrap failed (is $MIRROR reachable from this host?)"

echo "==> chromium (apt on the host, into the root filesystem)"
# apt runs chrooted but with the host's network; the container never reaches an index.
cp /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
echo "deb $MIRROR $SUITE main" >"$ROOTFS/etc/apt/sources.list"
mount -t proc proc "$ROOTFS/proc"
trap 'umount "$ROOTFS/proc" 2>/dev/null || true; rm -rf --one-file-system "$WORK"' EXIT
chroot "$ROOTFS" apt-get update -qq || fail "apt-get update failed in the root filesystem"
DEBIAN_FRONTEND=noninteractive chroot "$ROOTFS" apt-get install -y -qq --no-install-recommends \
    chromium fonts-liberation >/dev/null || fail "installing chromium failed"
umount "$ROOTFS/proc"

echo "==> trimming the root filesystem"
# Rebuilt, never updated in place: indexes, caches, documentation and translations go.
rm -rf "$ROOTFS"/var/cache/apt/* "$ROOTFS"/var/lib/apt/lists/* \
    "$ROOTFS"/var/log/* "$ROOTFS"/tmp/* "$ROOTFS"/root/.cache \
    "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* \
    "$ROOTFS"/usr/share/locale/*
: >"$ROOTFS/etc/hostname"
: >"$ROOTFS/etc/resolv.conf"
echo "browser:x:$BROWSER_UID:$BROWSER_UID::/tmp:/usr/sbin/nologin" >>"$ROOTFS/etc/passwd"
echo "browser:x:$BROWSER_UID:" >>"$ROOTFS/etc/group"

echo "==> importing as $TAG"
tar --numeric-owner -C "$ROOTFS" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV HOME=/tmp' \
    --change "USER $BROWSER_UID:$BROWSER_UID" \
    --change "LABEL io.flotilla.base-recipe=${FLOTILLA_RECIPE_HASH:-unknown}" \
    --change 'CMD ["chromium", "--version"]' \
    - "$TAG" >/dev/null || fail "docker import failed"
echo "==> $TAG ready ($(docker image inspect --format '{{.Size}}' "$TAG") bytes)"

#!/usr/bin/env bash
# Build the offline base image for agent containers: a minimal Debian bookworm root
# filesystem with python3 and CA certificates, imported into Docker without any registry.
#
# Usage: images/base/build.sh [TAG]            (default TAG: flotilla/base:bookworm)
# Environment:
#   FLOTILLA_DEBIAN_MIRROR  Debian mirror URL; default: the first bookworm mirror in the
#                           host's apt sources, else http://deb.debian.org/debian
#   FLOTILLA_RECIPE_HASH    recorded as the image label io.flotilla.base-recipe
#
# Needs root (debootstrap creates device nodes and chroots), debootstrap and docker.
set -euo pipefail

TAG="${1:-flotilla/base:bookworm}"
SUITE=bookworm

fail() {
    echo "base image: $*" >&2
    exit 1
}

# Prints the first Debian mirror (not the security archive) that serves $SUITE according
# to the host's apt sources, in deb822 (*.sources) or one-line (*.list) format.
host_debian_mirror() {
    local file
    for file in /etc/apt/sources.list.d/*.sources; do
        [[ -f "$file" ]] || continue
        awk -v suite="$SUITE" '
            function flush() {
                if (uris != "" && (" " suites " ") ~ (" " suite " ")) {
                    split(uris, list, " "); print list[1]; found = 1; exit
                }
                uris = ""; suites = ""
            }
            /^[[:space:]]*$/ { flush(); next }
            tolower($1) == "uris:" { uris = ""; for (i = 2; i <= NF; i++) uris = uris " " $i }
            tolower($1) == "suites:" { suites = ""; for (i = 2; i <= NF; i++) suites = suites " " $i }
            END { if (!found) flush() }
        ' "$file"
    done | grep -v -- '-security' | head -n 1 || true
    for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f "$file" ]] || continue
        awk -v suite="$SUITE" '$1 == "deb" {
            i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
            if ($(i + 1) == suite) print $i
        }' "$file"
    done | grep -v -- '-security' | head -n 1 || true
}

[[ "$(id -u)" == 0 ]] || fail "must run as root (debootstrap needs it); try: sudo $0 $*"
command -v debootstrap >/dev/null || fail "debootstrap is not installed (apt-get install debootstrap)"
command -v docker >/dev/null || fail "the docker CLI is not installed"
docker info >/dev/null 2>&1 || fail "no Docker daemon answers; start it and retry"

MIRROR="${FLOTILLA_DEBIAN_MIRROR:-$(host_debian_mirror | head -n 1 || true)}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/flotilla-base.XXXXXX")"
trap 'rm -rf --one-file-system "$WORK"' EXIT
ROOTFS="$WORK/rootfs"

echo "==> debootstrap $SUITE from $MIRROR"
debootstrap --variant=minbase --include=python3,ca-certificates "$SUITE" "$ROOTFS" "$MIRROR" \
    || fail "debootstrap failed (is $MIRROR reachable from this host?)"

echo "==> trimming the root filesystem"
# The image is never updated in place (it is rebuilt), so package indexes and caches go;
# documentation and translations are dead weight in a container nobody logs into.
rm -rf "$ROOTFS"/var/cache/apt/* "$ROOTFS"/var/lib/apt/lists/* \
    "$ROOTFS"/var/cache/debconf/*-old "$ROOTFS"/var/lib/dpkg/*-old \
    "$ROOTFS"/var/log/* "$ROOTFS"/tmp/* "$ROOTFS"/root/.cache \
    "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* \
    "$ROOTFS"/usr/share/locale/* "$ROOTFS"/usr/share/lintian "$ROOTFS"/usr/share/linda
# debootstrap leaves the build host's name and resolver in place; Docker provides both.
: >"$ROOTFS/etc/hostname"
: >"$ROOTFS/etc/resolv.conf"

echo "==> importing as $TAG"
tar --numeric-owner -C "$ROOTFS" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change "LABEL io.flotilla.base-recipe=${FLOTILLA_RECIPE_HASH:-unknown}" \
    --change "LABEL io.flotilla.debian-mirror=$MIRROR" \
    --change 'CMD ["python3"]' \
    - "$TAG" >/dev/null || fail "docker import failed"
echo "==> $TAG ready ($(docker image inspect --format '{{.Size}}' "$TAG") bytes)"

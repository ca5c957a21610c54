# Sourced by the scripts in this folder: make a Docker daemon answer when this machine allows it.
# ensure_docker returns 0 when `docker info` answers, installing Docker with apt and starting the
# daemon when running as root on Debian or Ubuntu; otherwise it says why and returns 1.
ensure_docker() {
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    return 0
  fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "no Docker daemon answers, and installing one needs root and apt-get" >&2
    return 1
  fi
  if ! command -v dockerd >/dev/null 2>&1; then
    echo "==> apt-get install docker.io"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io iptables >/dev/null || {
      echo "apt-get could not install docker.io" >&2
      return 1
    }
  fi
  if ! docker info >/dev/null 2>&1; then
    echo "==> starting dockerd"
    if command -v systemctl >/dev/null 2>&1 && systemctl is-system-running >/dev/null 2>&1; then
      systemctl start docker || true
    fi
    if ! docker info >/dev/null 2>&1; then
      (dockerd >/tmp/flotilla-dockerd.log 2>&1 &)
    fi
    for _ in $(seq 1 60); do
      docker info >/dev/null 2>&1 && return 0
      sleep 1
    done
    echo "dockerd did not start; see /tmp/flotilla-dockerd.log" >&2
    tail -5 /tmp/flotilla-dockerd.log >&2 2>/dev/null || true
    return 1
  fi
}

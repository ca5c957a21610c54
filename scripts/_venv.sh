# Sourced by the scripts in this folder: make .venv with Flotilla and the given extras installed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
ensure_venv() {
  local extras="$1"
  if [ ! -x "$VENV/bin/python" ]; then
    echo "==> creating $VENV"
    python3 -m venv "$VENV"
  fi
  local stamp="$VENV/.flotilla-$extras-$(sha256sum "$ROOT/pyproject.toml" | cut -c1-12)"
  if [ ! -f "$stamp" ]; then
    echo "==> installing flotilla[$extras] into $VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -e "$ROOT[$extras]"
    touch "$stamp"
  fi
}

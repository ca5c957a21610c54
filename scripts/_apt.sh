# Sourced by the scripts in this folder: install the Debian packages a step needs when their
# commands are missing.
#
# ensure_packages PURPOSE COMMAND=PACKAGE...
#   For each COMMAND not on PATH, installs PACKAGE with apt-get: as root, else through sudo when
#   sudo runs without asking for a password. Says what it installs and why. Returns 1, naming the
#   packages and the command to run by hand, when this machine does not allow it.
ensure_packages() {
  local purpose="$1" pair
  shift
  local missing=()
  for pair in "$@"; do
    command -v "${pair%%=*}" >/dev/null 2>&1 || missing+=("${pair#*=}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local as_root=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
      as_root=(sudo -n)
    else
      echo "$purpose needs ${missing[*]}, which is not installed, and installing it needs root:" >&2
      echo "  run: sudo apt-get install ${missing[*]}   (or run this script as root)" >&2
      return 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$purpose needs ${missing[*]}, which is not installed, and there is no apt-get here:" >&2
    echo "  install ${missing[*]} with this system's package manager" >&2
    return 1
  fi
  echo "==> installing ${missing[*]} (for $purpose): ${as_root[*]}${as_root[*]:+ }apt-get install ${missing[*]}"
  if ! "${as_root[@]}" apt-get update -qq \
    || ! "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; then
    echo "apt-get could not install ${missing[*]} (needed for $purpose)" >&2
    return 1
  fi
}

# fetch_debs FOLDER PACKAGE
#   Puts into FOLDER the .deb files of PACKAGE and of what it needs to install (recursively, no
#   recommends), fetched with `apt-get download` where FOLDER lacks them: the offline apt source
#   that the clean-machine demo test serves to a container without a network. Returns 1 (saying
#   why) when apt-get cannot fetch them.
fetch_debs() {
  local folder="$1" package="$2" name missing=()
  # Like the installs above, only a root run uses the package archive.
  [ "$(id -u)" = 0 ] || { echo "not root: not fetching $package's .deb files" >&2; return 1; }
  command -v apt-cache >/dev/null 2>&1 || { echo "no apt-cache here: cannot fetch $package's .deb files" >&2; return 1; }
  mkdir -p "$folder"
  for name in $(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
      --no-breaks --no-replaces --no-enhances "$package" | grep -v '^ ' | grep -v '^<'); do
    compgen -G "$folder/${name}_*.deb" >/dev/null || missing+=("$name")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "==> fetching .deb files for the clean-machine demo test into $folder: ${missing[*]}"
  (cd "$folder" && apt-get download "${missing[@]}" >/dev/null 2>&1) || {
    echo "apt-get could not fetch ${missing[*]}" >&2
    return 1
  }
}

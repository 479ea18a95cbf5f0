#!/usr/bin/env bash
# Install everything vsbench needs on Debian 12, as root: system packages from Debian and
# the Python package (editable, in ./.venv). Idempotent; safe to run again.
#   tools/setup.sh          runtime only
#   tools/setup.sh --test   also the test dependencies (pytest, MLRsearch, the kernel lab)
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0
[ "${1:-}" = "--test" ] && want_test=1

if [ "$(id -u)" -ne 0 ]; then
  echo "tools/setup.sh: must run as root (it installs Debian packages and builds namespaces)" >&2
  exit 2
fi

# The Debian packages, named one per line in tools/packages/*.txt ('#' starts a comment).
# Every package a run needs is named there explicitly: nothing relies on Recommends.
read_list() { sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$1"; }
mapfile -t packages < <(read_list tools/packages/runtime.txt)
if [ "$want_test" = 1 ]; then
  mapfile -t test_packages < <(read_list tools/packages/test.txt)
  packages+=("${test_packages[@]}")
fi
if [ "$want_test" = 1 ] && [ -x tools/kernel-lab/packages ]; then
  mapfile -t lab < <(tools/kernel-lab/packages)
  packages+=("${lab[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "tools/setup.sh: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -q
  apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
extras=""
[ "$want_test" = 1 ] && extras="[test]"
# uv installs the same packages as pip, from PyPI, in a fraction of the time (a
# clean checkout's venv: 95 s with pip, 39 s with uv, both caches warm), which every CI run
# and fresh machine pays. Unlike pip it does not compile all 11,000 modules it installs
# (26 s more with --compile-bytecode): Python compiles and caches the few hundred a run
# imports, the first time. pip stays in the venv for whoever uses it; if uv cannot be
# installed or cannot install (it does not read pip's configuration: an index or a CA set
# only there), pip does the work.
if .venv/bin/python -m pip install -q uv && .venv/bin/python -m uv pip install -q --python .venv/bin/python -e ".${extras}"; then
  :
else
  echo "tools/setup.sh: installing with uv failed (above); installing with pip (slower)" >&2
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".${extras}"
fi
echo "tools/setup.sh: ready ($(.venv/bin/vsbench --version))"

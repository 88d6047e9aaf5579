#!/usr/bin/env bash
# ripple's Jupyter kernel and ipykernel side by side (bench.py says what is
# measured), both on Debian's /usr/bin/python3 and driven by jupyter_client.
# Builds ripple, installs its kernelspec into a temporary Jupyter data
# directory (beside Debian's python3 kernelspec), installs Jupyter's Debian
# packages when they are missing.
# Usage: bash bench/jupyter/run.sh [-n ROUND_TRIPS]
set -euo pipefail
cd "$(dirname "$0")/../.."

PY=/usr/bin/python3
[ -x "$PY" ] || { echo "bench/jupyter: $PY is required (Debian's python3)" >&2; exit 1; }
if ! "$PY" -c "import jupyter_client, ipykernel" 2>/dev/null; then
    echo "bench/jupyter: installing python3-jupyter-client python3-ipykernel" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-jupyter-client python3-ipykernel >&2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/ripple" ./cmd/ripple
export JUPYTER_DATA_DIR="$tmp/jupyter" XDG_CACHE_HOME="$tmp/cache" PYDEVD_DISABLE_FILE_VALIDATION=1
"$tmp/ripple" jupyter install --python "$PY" >&2
exec "$PY" -Xfrozen_modules=off bench/jupyter/bench.py "$@"

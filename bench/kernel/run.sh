#!/usr/bin/env bash
# Side-by-side benchmark of ripple's kernel and Jupyter's ipykernel, both on
# /usr/bin/python3. Installs Jupyter's Debian packages when they are missing.
# Usage: bash bench/kernel/run.sh [-n ROUND_TRIPS]
set -euo pipefail
cd "$(dirname "$0")/../.."

PY=/usr/bin/python3
[ -x "$PY" ] || { echo "bench/kernel: $PY is required (Debian's python3)" >&2; exit 1; }
if ! "$PY" -c "import jupyter_client, ipykernel" 2>/dev/null; then
    echo "bench/kernel: installing python3-jupyter-client python3-ipykernel" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-jupyter-client python3-ipykernel >&2
fi
exec go run ./bench/kernel -python "$PY" "$@"

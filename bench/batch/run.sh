#!/usr/bin/env bash
# ripple run against pytest on the same interpreter (/usr/bin/python3):
# parallel efficiency on 200 sleeping tests, the ratio to serial pytest,
# and the per-test overhead on 2,000 trivial tests. Installs Debian's
# python3-pytest when it is missing.
# Usage: bash bench/batch/run.sh [-repeat N] [-sleepers N] [-trivial N]
set -euo pipefail
cd "$(dirname "$0")/../.."

PY=/usr/bin/python3
[ -x "$PY" ] || { echo "bench/batch: $PY is required (Debian's python3)" >&2; exit 1; }
if ! "$PY" -c "import pytest" 2>/dev/null; then
    echo "bench/batch: installing python3-pytest" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pytest >&2
fi
exec go run ./bench/batch -python "$PY" "$@"

#!/usr/bin/env bash
# The web page's numbers (issue 29): render time of 1k/10k/100k printed
# lines, long tasks while 1 MB/s of output streams for STREAM_SECONDS
# (default 6; 0: none), keystroke-to-value in the page (p50/p99), the
# tab's memory after 100k lines. Builds cmd/ripple (or takes a binary:
# RIPPLE_BIN=path), serves
# a generated project on Debian's python3 and drives the page in headless
# chromium with tests/web's playwright-core; prints one table.
#
#   bash bench/web/run.sh                  # -- KEYS=60 SIZES=1000,10000,100000 STREAM_SECONDS=6
#   RIPPLE_BIN=/tmp/old/ripple bash bench/web/run.sh   # another build's page
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'kill "${srv:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
bin=${RIPPLE_BIN:-}
if [ -z "$bin" ]; then
  bin=$work/ripple
  (cd "$root" && go build -o "$bin" ./cmd/ripple)
fi
if [ ! -d "$root/tests/web/node_modules/playwright-core" ]; then
  (cd "$root/tests/web" && npm ci --silent)
fi
project=$work/project
mkdir -p "$project"
IFS=, read -ra sizes <<< "${SIZES:-1000,10000,100000}"
for n in "${sizes[@]}"; do
  printf 'n = %d\nfor i in range(n):\n    print("line", i)\ndone = n\n' "$n" > "$project/out$n.py"
done
# 1 MB/s: every 20 ms, 200 lines of about 100 bytes (one in ten coloured),
# paced by the clock (tests/web/stream_test.go prints the same).
export STREAM_SECONDS=${STREAM_SECONDS:-6}
cat > "$project/stream.py" <<EOF
import time

rest = "y" * 90
start = time.monotonic()
for k in range($STREAM_SECONDS * 50):
    block = "".join(("\\x1b[32m%08d\\x1b[0m " if n % 10 == 0 else "%08d ") % (k * 200 + n) + rest + "\\n" for n in range(200))
    print(block, end="")
    ahead = start + (k + 1) * 0.02 - time.monotonic()
    if ahead > 0:
        time.sleep(ahead)
streamed = $STREAM_SECONDS * 50 * 200
EOF
printf 'base = 1000\nvalue = base + 0\n' > "$project/main.py"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" serve --kernels 1 --python /usr/bin/python3 --addr "127.0.0.1:$port" --token bench "$project" > "$work/serve.log" 2>&1 &
srv=$!
for _ in $(seq 100); do grep -q "web page at" "$work/serve.log" && break; sleep 0.1; done
cd "$root/tests/web"
node "$root/bench/web/page.mjs" "http://127.0.0.1:$port/?token=bench" "${KEYS:-60}" "${sizes[@]}"

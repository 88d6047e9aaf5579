#!/usr/bin/env bash
# Runs the queue's benchmarks and prints their figures against the queue's
# targets: collapsing enqueues, scheduling latency, edit bursts.
# Usage: bash bench/queue/run.sh   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/../.."

out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench 'EnqueueCollapse' -cpu 1 -benchtime 1s ./queue/ >"$out"
go test -run '^$' -bench 'SchedulingLatency' -benchtime 100000x ./queue/ >>"$out"
go test -run '^$' -bench 'EditBurst' -benchtime 1x ./queue/ >>"$out"

# metric NAME LINE: the value printed before the unit NAME on a bench line.
awk '
function metric(unit,   i) { for (i = 3; i <= NF; i++) if ($i == unit) return $(i-1); return "?" }
/^BenchmarkEnqueueCollapse/ {
	printf "%-46s %12s ops/s %4s allocs/op   (target >= 1000000 ops/s, 0 allocs)\n", $1, metric("ops/s"), metric("allocs/op")
}
/^BenchmarkSchedulingLatency/ {
	printf "%-46s p50 %7s us  p99 %7s us  max %8s us   (target p99 <= 50 us)\n", $1, metric("p50-µs"), metric("p99-µs"), metric("max-µs")
}
/^BenchmarkEditBurst/ {
	printf "%-46s %6s compiles  %5s executes/context (max %s)  %8s edits/s   (target <= 3 runs per context)\n", $1, metric("compiles/burst"), metric("executes/context"), metric("max-executes/context"), metric("edits/s")
}' "$out"

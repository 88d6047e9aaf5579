#!/usr/bin/env bash
# Runs the engine's end-to-end benchmarks (engine/bench_test.go: the Go
# engine with a real kernel) and prints their figures against the engine's
# targets: edit to value, incremental against from scratch, compile.
# Usage: bash bench/engine/run.sh [-n EDITS]   (default 200)
set -euo pipefail
cd "$(dirname "$0")/../.."

edits=200
if [ "${1:-}" = "-n" ]; then edits=$2; fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench 'EditOneOf1000Statements' -benchtime "${edits}x" ./engine/ >"$out"
go test -run '^$' -bench 'IncrementalVsFromScratch' -benchtime 5x ./engine/ >>"$out"
go test -run '^$' -bench 'Compile5000LineModule' -benchtime 10x ./engine/ >>"$out"

# metric UNIT: the value printed before UNIT on a bench line.
awk -v edits="$edits" '
function metric(unit,   i) { for (i = 3; i <= NF; i++) if ($i == unit) return $(i-1); return "?" }
function row(name, result, note) { printf "%-52s %-28s %s\n", name, result, note }
BEGIN { row("benchmark", "result", "note"); print "------------------------------------------------------------------------------------------------------------" }
/^BenchmarkEditOneOf1000Statements-/ {
	row("1,000-stmt main, edit one statement (engine): p50", metric("latency-p50-ms") " ms", "target <= 10 ms; ApplyEdit -> its update at Client.Notify")
	row("1,000-stmt main, edit one statement (engine): p99", metric("latency-p99-ms") " ms", edits " edits, each re-running exactly it + dependents (checked)")
	row("  Go allocations per edit", metric("allocs/op") " allocs, " metric("B/op") " B", "")
}
/^BenchmarkEditOneOf1000StatementsKernelOnly/ {
	row("  same edit, kernel alone (compile + execute): p50", metric("latency-p50-ms") " ms", "the rest of the engine figure is the Go side")
	row("  same edit, kernel alone: p99", metric("latency-p99-ms") " ms", "")
}
/^BenchmarkIncrementalVsFromScratch/ {
	row("200 x 5 ms statements: from scratch", metric("scratch-ms") " ms", "recompute all, call -> executionComplete")
	row("200 x 5 ms statements: edit one leaf", metric("incremental-ms") " ms", "ApplyEdit -> executionComplete")
	row("  incremental speed-up", metric("speedup-x") "x", "target >= 50x")
}
/^BenchmarkCompile5000LineModule\/kernel-cold/ { row("compile 5,000-line module, cold (kernel)", sprintf("%.1f ms", $3/1e6), "parse + analysis + load") }
/^BenchmarkCompile5000LineModule\/kernel-edit/ { row("compile 5,000-line module, one-line edit (kernel)", sprintf("%.1f ms", $3/1e6), "") }
/^BenchmarkCompile5000LineModule\/engine-edit/ { row("  the same edit through the engine", sprintf("%.1f ms", $3/1e6), "ApplyEdit -> executionComplete, nothing to re-run") }
' "$out"

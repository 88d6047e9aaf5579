#!/usr/bin/env bash
# bench/compat: pytest itself vs `ripple run --tests` (1 and 2 kernels) on
# real test suites that ship with Debian packages. Prints, per suite: tests
# collected by each, outcomes by kind, the testcases whose outcome differs
# (must be 0) and the wall times (medians of RUNS runs), then one summary
# table. See bench/README.md.
#
#   bash bench/compat/run.sh                      # the default suites, 1 run
#   RUNS=3 bash bench/compat/run.sh               # medians of 3
#   bash bench/compat/run.sh numpy/linalg/tests   # suites: paths under dist-packages,
#                                                 # a sub-suite's files joined with ","
#   SPLIT=1 bash bench/compat/run.sh             # ripple run --split-collection
#   DIST=loadscope bash bench/compat/run.sh      # ripple run --dist loadscope
#   DIST=load bash bench/compat/run.sh           # ripple run --dist load (xdist's default)
#   REWRITE=off bash bench/compat/run.sh         # ripple without its assertion-rewrite cache
#   PYTEST_PYC=1 bash bench/compat/run.sh        # let pytest cache its rewriting too
#                                                 # (PYTHONPYCACHEPREFIX in the bench's temp dir)
#   ALSO="--dist load" bash bench/compat/run.sh  # also ripple with 2 kernels and these
#                                                 # arguments, in the same runs (a column)
#   bash bench/compat/run.sh gen:small:300 gen:deselect:20000
#                                                 # synthetic suites (gen_suite.py): 300 fast
#                                                 # tests; 20,000 of which addopts deselect 95%
#   bash bench/compat/run.sh small               # the suites where start-up and collection
#                                                 # weigh most: gen:small:100 gen:small:390
#                                                 # gen:deselect:20000
#   BEFORE=/tmp/ripple-before bash bench/compat/run.sh
#                                                 # also that binary with 2 kernels, in the
#                                                 # same runs (a before/after comparison)
set -euo pipefail
cd "$(dirname "$0")/../.."

PY=${PYTHON:-/usr/bin/python3}
RUNS=${RUNS:-1}
BEFORE=${BEFORE:-}
ALSO=${ALSO:-}
RIPPLE_ARGS=()
[ -n "${SPLIT:-}" ] && RIPPLE_ARGS=(--split-collection)
[ -n "${DIST:-}" ] && RIPPLE_ARGS+=(--dist "$DIST")
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))' 2>/dev/null || true)
[ -d /usr/lib/python3/dist-packages ] && SITE=/usr/lib/python3/dist-packages
DEFAULT_SUITES="numpy/random/tests scipy/linalg/tests pandas/tests/series/methods sympy/sets/tests,sympy/logic/tests,sympy/core/tests/test_subs.py,sympy/core/tests/test_relational.py,sympy/core/tests/test_assumptions.py"
SUITES=${*:-$DEFAULT_SUITES}
[ "$SUITES" = small ] && SUITES="gen:small:100 gen:small:390 gen:deselect:20000"

# What the suites need, from apt, when missing.
need=()
"$PY" -c 'import pytest' 2>/dev/null || need+=(python3-pytest)
# numpy's and pandas' conftest.py import hypothesis.
"$PY" -c 'import hypothesis' 2>/dev/null || need+=(python3-hypothesis)
for s in $SUITES; do
  [[ $s == gen:* ]] && continue
  pkg=${s%%/*}
  "$PY" -c "import $pkg" 2>/dev/null || need+=("python3-$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "bench/compat: installing ${need[*]}" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/ripple" ./cmd/ripple

# Assertion rewriting, most of collection on assert-heavy suites: pytest
# keeps it in __pycache__ unless it must not write bytecode or cannot
# write there; ripple's kernels then keep it in their own cache, here a
# fresh one per bench run (the first ripple run of a suite fills it).
if [ -n "${PYTEST_PYC:-}" ]; then
  unset PYTHONDONTWRITEBYTECODE
  export PYTHONPYCACHEPREFIX="$work/pycache"
fi
# ripple's cache directory (kernel package, interpreter probes, the
# default kernels' record of test times) is the bench's own: rippleF, a
# first run, finds no record of its suite; rippleD, run right after it,
# finds the one rippleF left (a later run: kernelchoice.go).
export XDG_CACHE_HOME="$work/cache"
if [ "${REWRITE:-}" = off ]; then
  export RIPPLE_REWRITE_CACHE=off
else
  export RIPPLE_REWRITE_CACHE="$work/rewrite-cache"
fi
pytest_pyc=$("$PY" - "$SITE" <<'PYEOF'
import os, sys
if sys.dont_write_bytecode:
    print("no (PYTHONDONTWRITEBYTECODE is set)")
elif sys.pycache_prefix:
    print("yes, in %s" % sys.pycache_prefix)
elif not os.access(sys.argv[1], os.W_OK):
    print("no (%s is read-only)" % sys.argv[1])
else:
    print("yes, in __pycache__ beside the tests")
PYEOF
)
echo "bench/compat: pytest caches its assertion rewriting: $pytest_pyc; ripple's rewrite cache: $RIPPLE_REWRITE_CACHE" >&2

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# Both sides get the same arguments: no cache writes into the packages,
# JUnit with file and line (xunit1).
PYTEST_ARGS=(-p no:cacheprovider -o junit_family=xunit1)
rows=()
status=0
for s in $SUITES; do
  paths=()
  if [[ $s == gen:* ]]; then
    IFS=: read -r _ kind size <<<"$s"
    gen="$work/gen-$kind-$size"
    "$PY" bench/compat/gen_suite.py "$kind" "$gen" "$size"
    paths=("$gen")
  else
    for p in ${s//,/ }; do paths+=("$SITE/$p"); done
  fi
  missing=""
  for p in "${paths[@]}"; do [ -e "$p" ] || missing="$p"; done
  [ -z "$missing" ] || { echo "bench/compat: $missing: no such suite" >&2; status=1; continue; }
  name=$(echo "$s" | tr '/,' '-+' | cut -c1-80)
  dir="$work/$name"
  mkdir -p "$dir"
  declare -A times=()
  for run in $(seq "$RUNS"); do
    t0=$(now)
    (cd "$dir" && "$PY" -m pytest -q "${PYTEST_ARGS[@]}" --junitxml "$dir/pytest.xml" "${paths[@]}" >"$dir/pytest.out" 2>&1) || true
    t1=$(now)
    times[pytest]+="$(echo "$t1 - $t0" | bc) "
    if [ "$run" = 1 ] && [ -z "${warmed:-}" ]; then
      # Untimed: the kernel's package goes into the fresh cache once.
      "$work/ripple" run "$dir" --tests --python "$PY" --kernels 1 "${paths[@]}" -- "${PYTEST_ARGS[@]}" --co >/dev/null 2>&1 || true
      warmed=1
    fi
    for k in 1 2 F D; do
      kargs=(--kernels "$k")
      # The default kernels (kernelchoice.go): F with no record of the
      # suite's times (a first run), D with the record F left.
      [ "$k" = F ] && { kargs=(); rm -rf "$XDG_CACHE_HOME/ripple/test-times"; }
      [ "$k" = D ] && kargs=()
      t0=$(now)
      "$work/ripple" run "$dir" --tests "${RIPPLE_ARGS[@]}" --python "$PY" "${kargs[@]}" --junit "$dir/ripple$k.xml" "${paths[@]}" -- "${PYTEST_ARGS[@]}" \
        >"$dir/ripple$k.out" 2>&1 || true
      t1=$(now)
      times[ripple$k]+="$(echo "$t1 - $t0" | bc) "
    done
    if [ -n "$ALSO" ]; then
      t0=$(now)
      # shellcheck disable=SC2086 # ALSO is arguments, split on purpose
      "$work/ripple" run "$dir" --tests $ALSO --python "$PY" --kernels 2 --junit "$dir/also2.xml" "${paths[@]}" -- "${PYTEST_ARGS[@]}" \
        >"$dir/also2.out" 2>&1 || true
      t1=$(now)
      times[also2]+="$(echo "$t1 - $t0" | bc) "
    fi
    if [ -n "$BEFORE" ]; then
      t0=$(now)
      "$BEFORE" run "$dir" --tests --python "$PY" --kernels 2 --junit "$dir/before2.xml" "${paths[@]}" -- "${PYTEST_ARGS[@]}" \
        >"$dir/before2.out" 2>&1 || true
      t1=$(now)
      times[before2]+="$(echo "$t1 - $t0" | bc) "
    fi
  done
  p=$(echo "${times[pytest]}" | tr ' ' '\n' | grep . | median)
  r1=$(echo "${times[ripple1]}" | tr ' ' '\n' | grep . | median)
  r2=$(echo "${times[ripple2]}" | tr ' ' '\n' | grep . | median)
  rd=$(echo "${times[rippleD]}" | tr ' ' '\n' | grep . | median)
  rf=$(echo "${times[rippleF]}" | tr ' ' '\n' | grep . | median)
  b2=""
  a2=""
  [ -n "$ALSO" ] && a2=$(echo "${times[also2]}" | tr ' ' '\n' | grep . | median)
  [ -n "$BEFORE" ] && b2=$(echo "${times[before2]}" | tr ' ' '\n' | grep . | median)
  label=$(echo "$s" | sed 's/,.*/,.../')
  echo "== $s"
  for k in 1 2 F D; do
    echo -n "  $k kernel(s): "
    if ! "$PY" bench/compat/compare.py "$dir/pytest.xml" "$dir/ripple$k.xml" | sed '2,$s/^/    /'; then
      status=1
    fi
  done
  n=$("$PY" -c "import sys, xml.etree.ElementTree as E; print(len(list(E.parse(sys.argv[1]).getroot().iter('testcase'))))" "$dir/pytest.xml")
  d1=$("$PY" bench/compat/compare.py "$dir/pytest.xml" "$dir/ripple1.xml" | head -1 | sed 's/.*differ=//')
  d2=$("$PY" bench/compat/compare.py "$dir/pytest.xml" "$dir/ripple2.xml" | head -1 | sed 's/.*differ=//')
  row=$(printf '%-40s %7s %9.2f %9.2f %6.2fx %9.2f %6.2fx %9.2f %6.2fx %9.2f %6.2fx %7s %7s' "$label" "$n" "$p" "$r1" "$(echo "$r1 / $p" | bc -l)" "$r2" "$(echo "$r2 / $p" | bc -l)" "$rf" "$(echo "$rf / $p" | bc -l)" "$rd" "$(echo "$rd / $p" | bc -l)" "$d1" "$d2")
  if [ -n "$ALSO" ]; then
    echo -n "  $ALSO, 2 kernels: "
    "$PY" bench/compat/compare.py "$dir/pytest.xml" "$dir/also2.xml" | sed '2,$s/^/    /' || status=1
    da=$("$PY" bench/compat/compare.py "$dir/pytest.xml" "$dir/also2.xml" | head -1 | sed 's/.*differ=//')
    row+=$(printf ' %9.2f %6.2fx %7s' "$a2" "$(echo "$a2 / $p" | bc -l)" "$da")
  fi
  if [ -n "$BEFORE" ]; then
    echo -n "  before, 2 kernels: "
    "$PY" bench/compat/compare.py "$dir/pytest.xml" "$dir/before2.xml" | sed '2,$s/^/    /' || true
    db=$("$PY" bench/compat/compare.py "$dir/pytest.xml" "$dir/before2.xml" | head -1 | sed 's/.*differ=//')
    row+=$(printf ' %9.2f %6.2fx %7s' "$b2" "$(echo "$b2 / $p" | bc -l)" "$db")
  fi
  rows+=("$row")
  unset times
done
echo
header=$(printf '%-40s %7s %9s %9s %7s %9s %7s %9s %7s %9s %7s %7s %7s' suite tests pytest_s ripple1_s ratio ripple2_s ratio rippleF_s ratio rippleD_s ratio differ1 differ2)
[ -n "$ALSO" ] && header+=$(printf ' %9s %7s %7s' also2_s ratio differa)
[ -n "$BEFORE" ] && header+=$(printf ' %9s %7s %7s' before2_s ratio differb)
echo "$header"
for r in "${rows[@]}"; do echo "$r"; done
echo "(wall times: medians of $RUNS run(s); rippleF and rippleD: the default kernels (kernelchoice.go, batch/handover.go), F a first run (no record of the suite's times), D a later one (F's record); targets: every ratio <= 1.00, 2 kernels <= 0.60 where tests outweigh collection, differ 0)"
echo "(ripple: ${RIPPLE_ARGS[*]:-loadfile}${ALSO:+; also2: $ALSO}; pytest caches its assertion rewriting: $pytest_pyc; ripple's rewrite cache: ${RIPPLE_REWRITE_CACHE/$work/\$tmp}, filled by each suite's first ripple run)"
exit $status

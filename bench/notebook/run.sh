#!/usr/bin/env bash
# The notebook users' benchmarks: mimeTypes detection (mime.py), a 200-statement
# script's one-leaf edit against a from-scratch run and a 1-megapixel
# matplotlib PNG to the page (main.go, a real ripple serve over a
# WebSocket, Debian's /usr/bin/python3 with python3-matplotlib).
# Usage: bash bench/notebook/run.sh [-edits N]
set -euo pipefail
cd "$(dirname "$0")/../.."
go run ./bench/notebook "$@"
python3 bench/notebook/mime.py

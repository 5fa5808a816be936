#!/usr/bin/env bash
# build-tool.sh NAME COMMAND... runs one tool build and shows its progress:
# which tool, n of m (BUILD_TOTAL tools were missing when make started), and
# how long it took. The count is kept in the file $BUILD_COUNTER.
set -euo pipefail
name=$1
shift
n=1
if [[ -n "${BUILD_COUNTER:-}" ]]; then
	mkdir -p "$(dirname "$BUILD_COUNTER")"
	n=$(( $(cat "$BUILD_COUNTER" 2>/dev/null || echo 0) + 1 ))
	echo "$n" >"$BUILD_COUNTER"
fi
total=${BUILD_TOTAL:-1}
(( n > total )) && total=$n
start=$(date +%s)
echo ">> [$n/$total] building $name (first builds take minutes; cached by version under bin/)"
# A heartbeat every 30 s shows the build is alive on slow machines.
( while sleep 30; do echo "   ... still building $name, $(( $(date +%s) - start ))s elapsed"; done ) &
heartbeat=$!
trap 'kill $heartbeat 2>/dev/null || true' EXIT
"$@"
echo ">> [$n/$total] built $name in $(( $(date +%s) - start ))s"

#!/usr/bin/env bash
# The long chaos run (make test-chaos): first, on the real node, the manager
# processes killed at random while a PostgreSQL Database under a writer goes
# through switchovers, scaling, backups and tier changes ($2 rounds): the rows lost;
# then, on kwok, $1 lifecycle operations while two managers are killed at
# random. It ends with the chaos line, lost_rows from the first run (n/a
# where no real node can run).
set -euo pipefail
ops=$1 rounds=$2 go=${GO:-go}
mkdir -p out
DBPILOT_REALNODE_CHAOS_ROUNDS=$rounds "$go" test -count=1 -v -run '^TestOperatorKilledLosesNoCommittedRow$' -timeout 60m ./tests/realnode/ >out/chaos-realnode.log 2>&1 \
	|| { tail -50 out/chaos-realnode.log; exit 1; }
lost=$(sed -n 's/^chaos-realnode .* lost_rows=\([0-9]*\) .*/\1/p' out/chaos-realnode.log)
grep '^chaos-realnode ' out/chaos-realnode.log || echo "no real node on this machine: lost_rows=n/a"
DBPILOT_CHAOS_OPS=$ops "$go" test -count=1 -v -run '^TestChaosManagersKilledAtRandom$' -timeout 60m ./tests/e2e/ >out/chaos.log 2>&1 \
	|| { tail -50 out/chaos.log; exit 1; }
sed -n "s/^chaos \(.*\) lost_rows=n\/a \(.*\)/chaos \1 lost_rows=${lost:-n\/a} \2/p" out/chaos.log

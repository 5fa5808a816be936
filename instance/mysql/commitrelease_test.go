package mysql

import (
	"strings"
	"testing"
)

// TestCommitLockWatch follows mariadb-backup 10.11's log (as it prints it)
// to the commit lock: asked for, then held; other lines change nothing.
func TestCommitLockWatch(t *testing.T) {
	log := strings.Join([]string{
		"[00] 2026-11-24 04:41:52 Starting BACKUP STAGE BLOCK_DDL",
		"[00] 2026-11-24 04:41:52 Finished BACKUP STAGE BLOCK_DDL",
		"[00] 2026-11-24 04:41:52 Starting BACKUP STAGE BLOCK_COMMIT",
		"[00] 2026-11-24 04:41:53 Finished BACKUP STAGE BLOCK_COMMIT",
		"[00] 2026-11-24 04:41:53 Starting BACKUP STAGE BLOCK_COMMIT",
		"[00] 2026-11-24 04:41:53 Starting BACKUP STAGE END",
	}, "\n")
	var got []commitLockState
	for state := range commitLockWatch(strings.NewReader(log)) {
		got = append(got, state)
	}
	want := []commitLockState{commitLockWaiting, commitLockHeld}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("states = %v, want %v", got, want)
	}
}

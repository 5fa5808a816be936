package postgres

import (
	"maps"
	"testing"
)

func TestControlSettingsReadsWhatAStandbyMustMatch(t *testing.T) {
	out := `pg_control version number:            1300
Database system identifier:           7441234567890123456
wal_level setting:                    replica
wal_log_hints setting:                off
max_connections setting:              200
max_worker_processes setting:         8
max_wal_senders setting:              20
max_prepared_xacts setting:           0
max_locks_per_xact setting:           128
track_commit_timestamp setting:       off
`
	want := map[string]int{"max_connections": 200, "max_worker_processes": 8, "max_wal_senders": 20,
		"max_prepared_transactions": 0, "max_locks_per_transaction": 128}
	if got := controlSettings(out); !maps.Equal(got, want) {
		t.Errorf("settings %v, want %v", got, want)
	}
}

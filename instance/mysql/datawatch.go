package mysql

import (
	"context"
	"os"
	"path/filepath"

	"github.com/dbpilot/dbpilot/instance"
)

// errGTIDNotInPrimaryBinlog is MariaDB's ER_MASTER_FATAL_ERROR_READING_BINLOG
// for a replica's I/O thread: the GTID position it asks for is not in the
// primary's binary logs (purged, or the replica has transactions the
// primary never had).
const errGTIDNotInPrimaryBinlog = "1236"

var (
	_ instance.DataWatcher = (*Engine)(nil)
	_ instance.Mender      = (*Engine)(nil)
)

// Mend starts the replication threads of a MariaDB replica whose I/O thread
// stopped on an error a new clone would not fix (for instance "equal server
// ids": a restarted former primary reached itself through the read-write
// Service before it moved). A promotion in progress is left alone.
func (e *Engine) Mend(ctx context.Context) {
	if e.Flavor != MariaDB || e.promoting.Load() {
		return
	}
	db, err := e.connect(ctx, instance.Credentials{})
	if err != nil {
		return
	}
	defer db.Close()
	replica, running, fields, err := replicaFields(ctx, db)
	if err != nil || !replica || running || !restartable(fields) {
		return
	}
	_, _ = db.ExecContext(ctx, "START SLAVE")
}

// restartable reports a stopped replica whose I/O thread's last error a
// restart may cure: any but a position its primary no longer has (that one
// clones again).
func restartable(fields map[string]string) bool {
	errno := field(fields, "Last_IO_Errno")
	return errno != "" && errno != "0" && errno != errGTIDNotInPrimaryBinlog
}

// Unusable reports a MariaDB replica whose position its primary cannot
// serve any more.
func (e *Engine) Unusable(ctx context.Context) string {
	if e.Flavor != MariaDB || e.Replication.CloneFrom == "" {
		return ""
	}
	db, err := e.connect(ctx, instance.Credentials{})
	if err != nil {
		return ""
	}
	defer db.Close()
	replica, running, fields, err := replicaFields(ctx, db)
	if err != nil || !replica || running {
		return ""
	}
	return unusableReason(fields)
}

// unusableReason reads the replica status columns: the I/O thread stopped
// on a position the primary's binary logs no longer hold.
func unusableReason(fields map[string]string) string {
	if field(fields, "Last_IO_Errno") != errGTIDNotInPrimaryBinlog {
		return ""
	}
	return "the primary's binary logs no longer hold this replica's position: " + field(fields, "Last_IO_Error")
}

// Discard empties the datadir.
func (e *Engine) Discard() error {
	entries, err := os.ReadDir(e.DataDir)
	if err != nil {
		return err
	}
	for _, entry := range entries {
		if err := os.RemoveAll(filepath.Join(e.DataDir, entry.Name())); err != nil {
			return err
		}
	}
	return nil
}

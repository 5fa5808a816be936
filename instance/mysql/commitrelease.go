package mysql

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/dbpilot/dbpilot/instance"
)

// A semi-synchronous MariaDB primary with no replica connected and
// mariadb-backup deadlock: the backup's BACKUP STAGE BLOCK_COMMIT waits for
// the commits in flight, and each of those waits for an acknowledgement
// that only the replica being cloned would send, once the clone is done.
// (It happens after every failover whose former primary must be cloned
// again, when it is the only replica.) So while a backup for a replica
// waits for its commit lock and no replica is connected, the primary stops
// waiting for acknowledgements; the commits it then acknowledges finish
// before the lock is granted, so they are in the clone. Once the lock is
// held, the primary waits for acknowledgements again.

// runBackupForReplica runs mariadb-backup for a replica; on a
// semi-synchronous MariaDB primary it follows the backup's log and lets
// the commits in flight finish while the backup waits for its commit lock
// with no replica connected.
func (e *Engine) runBackupForReplica(cmd *exec.Cmd) error {
	if !e.Replication.SemiSync || e.Flavor != MariaDB {
		return cmd.Run()
	}
	log, logWriter := io.Pipe()
	cmd.Stderr = io.MultiWriter(cmd.Stderr, logWriter)
	states := commitLockWatch(log)
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		e.releaseCommitsForBackup(states)
	}()
	err := cmd.Run()
	logWriter.Close()
	<-followed
	return err
}

// Lines of mariadb-backup's log around its commit lock.
const (
	blockCommitStarting = "Starting BACKUP STAGE BLOCK_COMMIT"
	blockCommitFinished = "Finished BACKUP STAGE BLOCK_COMMIT"
)

// commitLockState is where a backup's log says it is with the commit lock.
type commitLockState int

const (
	commitLockNotAsked commitLockState = iota
	commitLockWaiting
	commitLockHeld
)

// nextCommitLockState follows one line of mariadb-backup's log.
func nextCommitLockState(state commitLockState, line string) commitLockState {
	switch {
	case strings.Contains(line, blockCommitFinished):
		return commitLockHeld
	case strings.Contains(line, blockCommitStarting) && state == commitLockNotAsked:
		return commitLockWaiting
	}
	return state
}

// commitLockWatch reads a backup's log and reports each change of its
// commit lock's state; the channel closes at the log's end.
func commitLockWatch(log io.Reader) <-chan commitLockState {
	states := make(chan commitLockState, 2)
	go func() {
		defer close(states)
		state := commitLockNotAsked
		scanner := bufio.NewScanner(log)
		for scanner.Scan() {
			if next := nextCommitLockState(state, scanner.Text()); next != state {
				state = next
				states <- state
			}
		}
		// Drain what the backup still writes, so it never blocks on us.
		_, _ = io.Copy(io.Discard, log)
	}()
	return states
}

// releasePoll is how often a waiting backup checks whether a replica is
// connected.
const releasePoll = 500 * time.Millisecond

// releaseCommitsForBackup follows the backup's commit lock: while the
// backup waits for it and the primary waits for acknowledgements with no
// replica connected, it turns the waiting off; when the lock is held or
// the log ends, it turns it back on if it turned it off.
func (e *Engine) releaseCommitsForBackup(states <-chan commitLockState) {
	var db *sql.DB
	released := false
	defer func() {
		if released {
			e.releasingCommits.Store(false)
			// The request's context may be gone; this must still happen.
			restore, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := db.ExecContext(restore, semiSyncStatement(e.Flavor).SQL); err != nil {
				fmt.Fprintf(os.Stderr, "waiting for replica acknowledgements again after a backup for a replica: %v\n", err)
			} else {
				fmt.Fprintln(os.Stderr, "the backup for a replica holds its commit lock: commits wait for a replica's acknowledgement again")
			}
		}
		if db != nil {
			db.Close()
		}
	}()
	state := commitLockNotAsked
	tick := time.NewTicker(releasePoll)
	defer tick.Stop()
	for {
		select {
		case next, open := <-states:
			if !open || next == commitLockHeld {
				return
			}
			state = next
		case <-tick.C:
		}
		// Checked again on every tick: a statement of the program's own may
		// have turned the waiting back on.
		if state != commitLockWaiting {
			continue
		}
		if db == nil {
			var err error
			if db, err = e.connect(context.Background(), instance.Credentials{}); err != nil {
				fmt.Fprintf(os.Stderr, "checking for connected replicas during a backup for a replica: %v\n", err)
				db = nil
				continue
			}
		}
		if waiting, err := waitsWithoutReplica(db); err != nil || !waiting {
			continue
		}
		e.releasingCommits.Store(true)
		if _, err := db.ExecContext(context.Background(), "SET GLOBAL rpl_semi_sync_master_enabled = OFF"); err != nil {
			e.releasingCommits.Store(released)
			fmt.Fprintf(os.Stderr, "letting commits finish for a backup for a replica: %v\n", err)
			continue
		}
		if released {
			continue
		}
		released = true
		fmt.Fprintln(os.Stderr, "no replica is connected and a backup for a replica waits for the commits in flight: "+
			"commits are acknowledged without a replica until the backup holds its commit lock (they are in the clone)")
	}
}

// waitsWithoutReplica reports whether this primary waits for replica
// acknowledgements while no replica that could send one is connected.
func waitsWithoutReplica(db *sql.DB) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var enabled bool
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.rpl_semi_sync_master_enabled").Scan(&enabled); err != nil {
		return false, err
	}
	if !enabled {
		return false, nil
	}
	var name string
	var clients int
	err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_clients'").Scan(&name, &clients)
	return clients == 0, err
}

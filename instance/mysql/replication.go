package mysql

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// ReplicationUser is the account replicas replicate as.
const ReplicationUser = layout.ReplicationUser

// BackupPath is where a MariaDB primary's instance program streams a
// physical backup to a new replica.
const BackupPath = "/backup"

// cloneGTIDFile, in a cloned datadir, holds the GTID position the backup
// ends at, until the replica has been pointed at its primary.
const cloneGTIDFile = "dbpilot-clone-gtid"

// Replication is how a MariaDB instance takes part in replication.
type Replication struct {
	// CloneFrom is the primary's host: an instance bootstrapped from it
	// copies the primary with mariadb-backup, streamed by the primary's
	// instance program, then replicates by GTID. Empty: the instance
	// bootstraps as a primary.
	CloneFrom string
	// PrimaryHost is the read-write Service's host, which a replica
	// follows; a demoted primary rejoins there.
	PrimaryHost string
	// Port is the primary's MariaDB port.
	Port int
	// InstancePort is the port of the primary's instance program.
	InstancePort int
	// Password is the replication user's password; it also authenticates a
	// replica to the primary's instance program for the backup.
	Password string
	// ServerID is this server's unique replication id.
	ServerID int
	// SemiSync makes a primary wait for a replica to acknowledge each
	// commit; it is turned on once the program's own statements are done.
	SemiSync bool
	// TLS is this pod's certificate: with it, a MariaDB replica verifies
	// its primary's certificate once the primary serves one.
	TLS instance.TLS
}

// semiSyncStatement turns on the primary's side of semi-synchronous
// replication.
func semiSyncStatement(flavor Flavor) Statement {
	if flavor == MySQL {
		return Statement{"waiting for a replica to acknowledge each commit", "SET GLOBAL rpl_semi_sync_source_enabled = ON"}
	}
	return Statement{"waiting for a replica to acknowledge each commit", "SET GLOBAL rpl_semi_sync_master_enabled = ON"}
}

// BackupHandler streams a physical backup of the running server
// (mariadb-backup, mbstream format) to a replica that presents the
// replication password as a bearer token; anyone else is refused.
func (e *Engine) BackupHandler() http.Handler {
	return instance.RequireToken(func() string { return e.Replication.Password }, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		osUser, err := currentUser()
		if err != nil {
			http.Error(w, "no OS user", http.StatusInternalServerError)
			return
		}
		tmp, err := os.MkdirTemp("", "backup-")
		if err != nil {
			http.Error(w, "no temporary directory", http.StatusInternalServerError)
			return
		}
		defer os.RemoveAll(tmp)
		args := append(e.defaultsArgs(), "--backup", "--stream=mbstream", "--target-dir="+tmp,
			"--datadir="+e.DataDir, "--socket="+e.Socket, "--user="+osUser)
		cmd := exec.CommandContext(r.Context(), "mariadb-backup", args...)
		cmd.Stdout = w
		var stderr strings.Builder
		cmd.Stderr = &stderr
		w.Header().Set("Content-Type", "application/octet-stream")
		if err := e.runBackupForReplica(cmd); err != nil {
			// The status is sent already; the replica sees a truncated
			// stream, which mbstream and --prepare reject.
			fmt.Fprintf(os.Stderr, "mariadb-backup for a replica failed: %v: %s\n", err, lastLines(stderr.String(), 5))
		}
	}))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// clone copies the primary into the empty datadir: the backup streamed by
// the primary's instance program is unpacked with mbstream and prepared;
// the GTID position it ends at is kept for pointing the replica at its
// primary once it runs.
func (e *Engine) clone(ctx context.Context) error {
	r := e.Replication
	if r.Password == "" {
		return errors.New("cloning a replica needs the replication password")
	}
	if err := os.MkdirAll(e.DataDir, 0o750); err != nil {
		return err
	}
	resp, err := r.requestBackup(ctx)
	if err != nil {
		return fmt.Errorf("asking %s for a backup: %w", r.CloneFrom, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("asking %s for a backup: %s", r.CloneFrom, resp.Status)
	}
	unpack := exec.CommandContext(ctx, "mbstream", "-x", "-C", e.DataDir)
	unpack.Stdin = resp.Body
	if out, err := unpack.CombinedOutput(); err != nil {
		return e.failClone(fmt.Errorf("mbstream: %v: %s", err, lastLines(string(out), 5)))
	}
	prepare := exec.CommandContext(ctx, "mariadb-backup", append(e.defaultsArgs(), "--prepare", "--target-dir="+e.DataDir)...)
	if out, err := prepare.CombinedOutput(); err != nil {
		return e.failClone(fmt.Errorf("mariadb-backup --prepare: %v: %s", err, lastLines(string(out), 5)))
	}
	gtid, err := backupGTID(e.DataDir)
	if err != nil {
		return e.failClone(err)
	}
	return os.WriteFile(filepath.Join(e.DataDir, cloneGTIDFile), []byte(gtid), 0o600)
}

// requestBackup asks the primary's instance program for a backup: over
// HTTPS verifying its certificate when this pod has one, over HTTP when
// it has none or the primary answers HTTPS with HTTP (a pod from before
// dbpilot issued certificates).
func (r Replication) requestBackup(ctx context.Context) (*http.Response, error) {
	address := net.JoinHostPort(r.CloneFrom, strconv.Itoa(r.InstancePort))
	get := func(client *http.Client, scheme string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+address+BackupPath, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+r.Password)
		return client.Do(req)
	}
	if !r.TLS.Enabled() {
		return get(http.DefaultClient, "http")
	}
	config, err := r.TLS.VerifyingConfig(r.CloneFrom)
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = config
	client := &http.Client{Transport: transport}
	defer client.CloseIdleConnections()
	resp, err := get(client, "https")
	if err != nil && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return get(http.DefaultClient, "http")
	}
	return resp, err
}

// failClone empties the datadir, so the next start clones again.
func (e *Engine) failClone(err error) error {
	_ = e.Discard()
	return err
}

// backupInfoFiles name the binlog position a backup ends at: MariaDB 10.x
// writes xtrabackup_binlog_info, 11.x mariadb_backup_binlog_info.
var backupInfoFiles = []string{"mariadb_backup_binlog_info", "xtrabackup_binlog_info"}

// backupGTID reads the GTID position from mariadb-backup's binlog info in
// dir: "binlog.000002<TAB>342<TAB>0-1-5".
func backupGTID(dir string) (string, error) {
	var f *os.File
	var err error
	for _, name := range backupInfoFiles {
		if f, err = os.Open(filepath.Join(dir, name)); err == nil {
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("the backup has no binlog position: %w", err)
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	fields := strings.Fields(line)
	if len(fields) < 3 {
		// A primary that has written nothing yet has no GTID.
		return "", nil
	}
	return fields[2], nil
}

// ReplicaStatements point a cloned replica at its primary from the GTID
// position its backup ended at, verifying the primary's certificate when
// verifyTLS is set.
func ReplicaStatements(r Replication, gtid string, verifyTLS bool) []Statement {
	return []Statement{
		{"setting the replica's GTID position", "SET GLOBAL gtid_slave_pos = " + quoteString(gtid)},
		{"pointing the replica at its primary", fmt.Sprintf(
			"CHANGE MASTER TO MASTER_HOST=%s, MASTER_PORT=%d, MASTER_USER=%s, MASTER_PASSWORD=%s, MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=5",
			quoteString(r.primaryHost()), r.port(), quoteString(ReplicationUser), quoteString(r.Password)) + tlsClause(r, verifyTLS)},
		{"starting replication", "START SLAVE"},
	}
}

// tlsClause adds CHANGE MASTER's verified TLS options when verifyTLS is
// set; without, the replica connects without TLS until SecureReplication
// finds the primary serves it.
func tlsClause(r Replication, verifyTLS bool) string {
	if !verifyTLS {
		return ""
	}
	return ", " + verifiedTLSOptions(r)
}

// primaryHost is where a replica replicates from.
func (r Replication) primaryHost() string {
	if r.PrimaryHost != "" {
		return r.PrimaryHost
	}
	return r.CloneFrom
}

func (r Replication) port() int {
	if r.Port == 0 {
		return 3306
	}
	return r.Port
}

// ReplicationUserStatements make the replication user exist, allowed to
// replicate and nothing else.
func ReplicationUserStatements(password string) []Statement {
	user := quoteString(ReplicationUser) + "@'%'"
	auth := "IDENTIFIED BY PASSWORD " + quoteString(nativePasswordHash(password))
	return []Statement{
		{"creating the replication user", "CREATE USER IF NOT EXISTS " + user + " " + auth},
		{"setting the replication user's password", "ALTER USER " + user + " " + auth},
		{"granting replication", "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO " + user},
	}
}

// replicaState reads the replica status: whether this server replicates,
// and whether both its threads run.
func replicaState(ctx context.Context, db *sql.DB) (replica, running bool, lastError string, err error) {
	replica, running, fields, err := replicaFields(ctx, db)
	return replica, running, fields["Last_IO_Error"] + fields["Last_SQL_Error"], err
}

// replicaFields reads SHOW REPLICA STATUS (MariaDB 10.5+ and MySQL 8.0.22+;
// MySQL 8.4 has no SHOW SLAVE STATUS) into its columns.
func replicaFields(ctx context.Context, db *sql.DB) (replica, running bool, fields map[string]string, err error) {
	rows, err := db.QueryContext(ctx, "SHOW REPLICA STATUS")
	if err != nil {
		return false, false, nil, err
	}
	defer rows.Close()
	columns, err := rows.Columns()
	if err != nil {
		return false, false, nil, err
	}
	if !rows.Next() {
		return false, false, nil, rows.Err()
	}
	values := make([]sql.NullString, len(columns))
	pointers := make([]any, len(columns))
	for i := range values {
		pointers[i] = &values[i]
	}
	if err := rows.Scan(pointers...); err != nil {
		return true, false, nil, err
	}
	fields = map[string]string{}
	for i, c := range columns {
		fields[c] = values[i].String
	}
	running = field(fields, "Slave_IO_Running", "Replica_IO_Running") == "Yes" &&
		field(fields, "Slave_SQL_Running", "Replica_SQL_Running") == "Yes"
	return true, running, fields, nil
}

// field is the first of the columns the status has: MariaDB keeps the
// Slave_/_Master names, MySQL 8.4 has only the Replica_/_Source ones.
func field(fields map[string]string, names ...string) string {
	for _, name := range names {
		if value, ok := fields[name]; ok {
			return value
		}
	}
	return ""
}

// masterInfoFile is where MariaDB keeps a replica's CHANGE MASTER settings.
const masterInfoFile = "master.info"

// hasReplicaData reports whether the datadir is a replica's: cloned and not
// yet pointed at its primary, or pointed at one. Such a server starts
// read-only and reports itself a replica from its first second, so it never
// takes a write or looks like a second primary while it starts.
func (e *Engine) hasReplicaData() bool {
	for _, name := range []string{cloneGTIDFile, masterInfoFile, rejoinFile} {
		if _, err := os.Stat(filepath.Join(e.DataDir, name)); err == nil {
			return true
		}
	}
	return false
}

// startReplica points a freshly cloned replica at its primary, once.
func (e *Engine) startReplica(ctx context.Context, db *sql.DB) error {
	path := filepath.Join(e.DataDir, cloneGTIDFile)
	gtid, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	// Whether the primary serves TLS is asked first; asking fails (it may
	// not answer yet): SecureReplication asks again later.
	verified, _ := e.Replication.primaryServesVerifiedTLS(ctx)
	for _, stmt := range ReplicaStatements(e.Replication, strings.TrimSpace(string(gtid)), verified) {
		if _, err := db.ExecContext(ctx, stmt.SQL); err != nil {
			return fmt.Errorf("%s: %w", stmt.What, err)
		}
	}
	return os.Remove(path)
}

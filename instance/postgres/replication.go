package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// ReplicationUser is the role replicas stream as.
const ReplicationUser = layout.ReplicationUser

// Replication is how an instance takes part in streaming replication.
type Replication struct {
	// CloneFrom is the primary's host: an instance bootstrapped from it
	// clones the primary with pg_basebackup and streams from it. Empty: the
	// instance bootstraps as a primary (initdb).
	CloneFrom string
	// PrimaryHost is the read-write Service's host, which a replica
	// follows; a demoted primary's data is pointed there.
	PrimaryHost string
	// Port is the primary's port.
	Port int
	// Password is the replication user's password; without one, no replica
	// can connect.
	Password string
	// SlotName is this instance's physical replication slot on the primary,
	// so the primary keeps the WAL this replica has not received yet.
	SlotName string
	// TLS is this pod's certificate: with it, connections to the primary
	// verify the primary's certificate against the Database's authority
	// once the primary serves one.
	TLS instance.TLS
	// PassFile is where libpq reads the replication password from
	// (writePassFile): primary_conninfo names the file and never holds the
	// password, which the server logs with a primary_conninfo changed at
	// a reload.
	PassFile string
}

// PassFile is the replication password's file in the socket directory: an
// emptyDir, never on the data volume nor in a backup.
func PassFile(socketDir string) string {
	return filepath.Join(socketDir, ".dbpilot-replication.pgpass")
}

// writePassFile writes the replication password as a libpq password file
// (mode 0600, as libpq requires) for the replication user, any host.
func (r Replication) writePassFile() error {
	if r.PassFile == "" || r.Password == "" {
		return nil
	}
	escape := strings.NewReplacer(`\`, `\\`, ":", `\:`)
	line := "*:*:*:" + ReplicationUser + ":" + escape.Replace(r.Password) + "\n"
	tmp := r.PassFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(line), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, r.PassFile)
}

// SSL modes of connections to the primary.
const (
	// sslVerifyFull verifies the primary's certificate for its host.
	sslVerifyFull = "verify-full"
	// sslPrefer is libpq's default: TLS where the server offers it,
	// unverified, else none.
	sslPrefer = "prefer"
)

// sslMode is the sslmode of connections to the primary at host:
// verify-full when this pod has its certificate and the primary serves one
// of the Database's authority; prefer when either has none (a pod from
// before dbpilot issued certificates). A primary whose certificate does
// not verify is an error: nothing is sent to it.
func (r Replication) sslMode(ctx context.Context, host string) (string, error) {
	if !r.TLS.Enabled() {
		return sslPrefer, nil
	}
	verified, err := ServesVerifiedTLS(ctx, host, r.port(), r.TLS)
	switch {
	case err != nil:
		return "", err
	case verified:
		return sslVerifyFull, nil
	}
	return sslPrefer, nil
}

// sslEnv is the environment that gives libpq's programs (pg_basebackup,
// pg_rewind) the sslmode, and the authority to verify with.
func (r Replication) sslEnv(mode string) []string {
	env := []string{"PGSSLMODE=" + mode}
	if mode == sslVerifyFull {
		env = append(env, "PGSSLROOTCERT="+r.TLS.CAFile())
	}
	return env
}

// sslOptions are the conninfo options of mode.
func (r Replication) sslOptions(mode string) []string {
	if mode == "" {
		return nil
	}
	options := []string{"sslmode=" + mode}
	if mode == sslVerifyFull {
		options = append(options, "sslrootcert="+conninfoValue(r.TLS.CAFile()))
	}
	return options
}

// BasebackupArgs are pg_basebackup's arguments to clone the primary into
// dataDir: WAL streamed during the copy, the standby configuration written
// (standby.signal and primary_conninfo), and this replica's slot created
// when createSlot is set (it may exist from an earlier clone).
func (r Replication) BasebackupArgs(dataDir string, createSlot bool) []string {
	args := []string{
		"--pgdata=" + dataDir,
		"--host=" + r.CloneFrom,
		"--port=" + strconv.Itoa(r.port()),
		"--username=" + ReplicationUser,
		"--wal-method=stream",
		"--write-recovery-conf",
		"--checkpoint=fast",
		"--no-password",
		"--slot=" + r.SlotName,
	}
	if createSlot {
		args = append(args, "--create-slot")
	}
	return args
}

func (r Replication) port() int {
	if r.Port == 0 {
		return 5432
	}
	return r.Port
}

// clone copies the primary into the empty data directory. The password
// goes to pg_basebackup in its environment, never on a command line or in
// a log.
func (e *Engine) clone(ctx context.Context) error {
	if e.Replication.Password == "" {
		return errors.New("cloning a replica needs the replication password")
	}
	if err := e.Replication.writePassFile(); err != nil {
		return fmt.Errorf("writing the replication password file: %w", err)
	}
	mode, err := e.Replication.sslMode(ctx, e.Replication.CloneFrom)
	if err != nil {
		return fmt.Errorf("asking the primary %s for TLS: %w", e.Replication.CloneFrom, err)
	}
	run := func(createSlot bool) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "pg_basebackup", e.Replication.BasebackupArgs(e.DataDir, createSlot)...)
		// The application name and the sslmode (written into
		// primary_conninfo with the rest of the connection) name the
		// standby in the primary's pg_stat_replication by its slot, as a
		// rejoined one is named, and keep it verifying the primary.
		cmd.Env = append(os.Environ(), "PGPASSFILE="+e.Replication.PassFile, "PGCONNECT_TIMEOUT=10", "PGAPPNAME="+e.Replication.SlotName)
		cmd.Env = append(cmd.Env, e.Replication.sslEnv(mode)...)
		return cmd.CombinedOutput()
	}
	out, err := run(true)
	if err != nil && strings.Contains(string(out), "already exists") {
		// The slot survived an earlier clone of this replica: reuse it.
		if rmErr := os.RemoveAll(e.DataDir); rmErr != nil {
			return rmErr
		}
		out, err = run(false)
	}
	if err != nil {
		_ = os.RemoveAll(e.DataDir)
		return fmt.Errorf("pg_basebackup from %s: %v: %s", e.Replication.CloneFrom, err, out)
	}
	return nil
}

// inRecovery reports whether the server is a standby.
func inRecovery(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var recovering bool
	err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering)
	return recovering, err
}

// streaming returns nil when the standby's WAL receiver streams from the
// primary.
func streaming(ctx context.Context, conn *pgx.Conn) error {
	var status string
	err := conn.QueryRow(ctx, "SELECT coalesce((SELECT status FROM pg_stat_wal_receiver), 'stopped')").Scan(&status)
	if err != nil {
		return err
	}
	if status != "streaming" {
		return fmt.Errorf("the replica does not stream from the primary (WAL receiver: %s)", status)
	}
	return nil
}

// ReplicationStatements make the replication user exist with its password.
func ReplicationStatements(verifier string, exists bool) []Statement {
	verb := "CREATE"
	if exists {
		verb = "ALTER"
	}
	return []Statement{{"setting up the replication user",
		verb + " ROLE " + ReplicationUser + " WITH LOGIN REPLICATION NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD " + literal(verifier)}}
}

package postgres

import (
	"context"
	"fmt"
	"regexp"

	"github.com/dbpilot/dbpilot/instance"
)

var _ instance.ReplicationSecurer = (*Engine)(nil)

// verifyFullOption is sslmode=verify-full in a conninfo, its value quoted
// (as pg_basebackup writes it) or not.
var verifyFullOption = regexp.MustCompile(`(^|\s)sslmode\s*=\s*'?verify-full'?(\s|$)`)

// verifiesPrimary reports whether a conninfo verifies the server's
// certificate for its host.
func verifiesPrimary(conninfo string) bool { return verifyFullOption.MatchString(conninfo) }

// SecureReplication has a replica whose primary_conninfo does not verify
// the primary (libpq's default, prefer) verify it once the primary serves
// a certificate of the Database's authority: primary_conninfo is set with
// sslmode=verify-full and the server reloads, so its WAL receiver
// reconnects that way (PostgreSQL 13 and later take primary_conninfo at a
// reload).
func (e *Engine) SecureReplication(ctx context.Context) (bool, error) {
	r := e.Replication
	if !r.TLS.Enabled() || r.PrimaryHost == "" {
		return false, nil
	}
	conn, err := e.connect(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close(ctx)
	recovering, err := inRecovery(ctx, conn)
	if err != nil || !recovering {
		return false, err
	}
	var current string
	if err := conn.QueryRow(ctx, "SELECT current_setting('primary_conninfo')").Scan(&current); err != nil {
		return false, err
	}
	if verifiesPrimary(current) {
		return false, nil
	}
	verified, err := ServesVerifiedTLS(ctx, r.PrimaryHost, r.port(), r.TLS)
	if err != nil || !verified {
		return false, err
	}
	if _, err := conn.Exec(ctx, "ALTER SYSTEM SET primary_conninfo = "+literal(r.primaryConninfo(sslVerifyFull))); err != nil {
		return false, fmt.Errorf("setting primary_conninfo: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return false, fmt.Errorf("reloading: %w", err)
	}
	return true, nil
}

package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/dbpilot/dbpilot/instance"
)

// primaryServesVerifiedTLS logs in to the primary as the replication user
// over TLS that verifies the primary's certificate for its host against
// the Database's authority. It reports false, with no error, when this pod
// has no certificate or the primary serves no TLS (a pod from before
// dbpilot issued certificates); a certificate that does not verify is an
// error, and the password is not sent.
func (r Replication) primaryServesVerifiedTLS(ctx context.Context) (bool, error) {
	if !r.TLS.Enabled() {
		return false, nil
	}
	config, err := r.TLS.VerifyingConfig(r.primaryHost())
	if err != nil {
		return false, err
	}
	cfg := driver.NewConfig()
	cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(r.primaryHost(), strconv.Itoa(r.port()))
	cfg.User, cfg.Passwd = ReplicationUser, r.Password
	cfg.Timeout, cfg.TLS = 5*time.Second, config
	connector, err := driver.NewConnector(cfg)
	if err != nil {
		return false, err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	err = db.PingContext(ctx)
	switch {
	case errors.Is(err, driver.ErrNoTLS):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// verifiedTLSOptions are CHANGE MASTER's options that make a MariaDB
// replica connect to its primary over TLS verifying its certificate.
func verifiedTLSOptions(r Replication) string {
	return "MASTER_SSL=1, MASTER_SSL_CA=" + quoteString(r.TLS.CAFile()) + ", MASTER_SSL_VERIFY_SERVER_CERT=1"
}

// SecureReplicationStatements switch a running MariaDB replica to TLS
// that verifies its primary.
func SecureReplicationStatements(r Replication) []Statement {
	return []Statement{
		{"stopping replication", "STOP SLAVE"},
		// The options not given keep their values.
		{"verifying the primary's certificate", "CHANGE MASTER TO " + verifiedTLSOptions(r)},
		{"starting replication", "START SLAVE"},
	}
}

var _ instance.ReplicationSecurer = (*Engine)(nil)

// SecureReplication switches a MariaDB replica that replicates without
// TLS (it was cloned or rejoined while its primary served none, or before
// dbpilot issued certificates) to TLS that verifies its primary, once the
// primary serves a certificate of the Database's authority, whether its
// replication runs or stopped (a primary that requires TLS refuses it
// without). (MySQL replicas are left as they are.)
func (e *Engine) SecureReplication(ctx context.Context) (bool, error) {
	r := e.Replication
	if e.Flavor != MariaDB || !r.TLS.Enabled() || e.promoting.Load() {
		return false, nil
	}
	db, err := e.connect(ctx, instance.Credentials{})
	if err != nil {
		return false, err
	}
	defer db.Close()
	replica, _, fields, err := replicaFields(ctx, db)
	if err != nil || !replica {
		return false, err
	}
	if fields["Master_SSL_Allowed"] == "Yes" && fields["Master_SSL_Verify_Server_Cert"] == "Yes" {
		return false, nil
	}
	verified, err := r.primaryServesVerifiedTLS(ctx)
	if err != nil || !verified {
		return false, err
	}
	for _, stmt := range SecureReplicationStatements(r) {
		if _, err := db.ExecContext(ctx, stmt.SQL); err != nil {
			return false, fmt.Errorf("%s: %w", stmt.What, err)
		}
	}
	return true, nil
}

package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
)

// MySQL 8.4 replicas copy their primary with the CLONE plugin and then
// replicate by GTID auto-positioning. These statements are unit-tested
// only: there is no MySQL server package on the machines dbpilot is tested
// on, so this path has never run against a real MySQL server.

// MySQLReplicationUserStatements make the replication user exist on a
// MySQL primary, allowed to replicate and to be cloned (BACKUP_ADMIN) and
// nothing else.
func MySQLReplicationUserStatements(password string) []Statement {
	user := quoteString(ReplicationUser) + "@'%'"
	auth := "IDENTIFIED BY " + quoteString(password)
	return []Statement{
		{"creating the replication user", "CREATE USER IF NOT EXISTS " + user + " " + auth},
		{"setting the replication user's password", "ALTER USER " + user + " " + auth},
		{"granting replication and cloning", "GRANT REPLICATION SLAVE, REPLICATION CLIENT, BACKUP_ADMIN ON *.* TO " + user},
	}
}

// CloneStatements make a freshly initialized MySQL replica copy its
// primary's data with the CLONE plugin (loaded by the configuration); the
// server shuts down when the copy is in place, and the instance program's
// exit makes the kubelet start it again on the cloned data. overTLS (the
// Database's certificate is mounted) has the copy travel encrypted
// (REQUIRE SSL, the clone plugin's own TLS; it does not verify the
// donor's name).
func CloneStatements(r Replication, overTLS bool) []Statement {
	donor := r.CloneFrom + ":" + strconv.Itoa(r.port())
	clone := fmt.Sprintf("CLONE INSTANCE FROM %s@%s:%d IDENTIFIED BY %s",
		quoteString(ReplicationUser), quoteString(r.CloneFrom), r.port(), quoteString(r.Password))
	if overTLS {
		clone += " REQUIRE SSL"
	}
	return []Statement{
		{"allowing the primary as clone donor", "SET GLOBAL clone_valid_donor_list = " + quoteString(donor)},
		{"cloning the primary", clone},
	}
}

// MySQLReplicaStatements point a cloned MySQL replica at its primary: GTID
// auto-positioning finds where the clone ended (overTLS: over TLS that
// verifies the primary's certificate), and the replica refuses every
// write but replication's.
func MySQLReplicaStatements(r Replication, overTLS bool) []Statement {
	source := fmt.Sprintf(
		"CHANGE REPLICATION SOURCE TO SOURCE_HOST=%s, SOURCE_PORT=%d, SOURCE_USER=%s, SOURCE_PASSWORD=%s, SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1, SOURCE_CONNECT_RETRY=5",
		quoteString(r.CloneFrom), r.port(), quoteString(ReplicationUser), quoteString(r.Password))
	if overTLS {
		source += ", SOURCE_SSL=1, SOURCE_SSL_CA=" + quoteString(r.TLS.CAFile()) + ", SOURCE_SSL_VERIFY_SERVER_CERT=1"
	}
	return []Statement{
		{"pointing the replica at its primary", source},
		{"starting replication", "START REPLICA"},
		{"making the replica read-only", "SET GLOBAL super_read_only = ON"},
	}
}

// mysqlReplicaStep is what a MySQL replica's instance program does next,
// from what the server says about itself.
type mysqlReplicaStep int

const (
	// stepClone: a new replica copies its primary.
	stepClone mysqlReplicaStep = iota
	// stepPointAtPrimary: the clone is in place; replication is set up.
	stepPointAtPrimary
	// stepReplicating: nothing to do but keep it read-only.
	stepReplicating
)

// nextMySQLReplicaStep decides from the last clone's state (empty: never
// cloned) and whether a replication source is configured.
func nextMySQLReplicaStep(cloneState string, sourceConfigured bool) (mysqlReplicaStep, error) {
	switch {
	case sourceConfigured:
		return stepReplicating, nil
	case cloneState == "Completed":
		return stepPointAtPrimary, nil
	case cloneState == "" || cloneState == "Failed":
		return stepClone, nil
	}
	return 0, fmt.Errorf("a clone is %s", cloneState)
}

// ensureMySQLReplica takes a MySQL replica one step towards replicating.
func (e *Engine) ensureMySQLReplica(ctx context.Context, db *sql.DB) error {
	var cloneState string
	err := db.QueryRowContext(ctx, "SELECT STATE FROM performance_schema.clone_status ORDER BY ID DESC LIMIT 1").Scan(&cloneState)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("reading the clone status: %w", err)
	}
	configured, _, _, err := replicaFields(ctx, db)
	if err != nil {
		return err
	}
	step, err := nextMySQLReplicaStep(cloneState, configured)
	if err != nil {
		return err
	}
	var statements []Statement
	switch step {
	case stepClone:
		statements = CloneStatements(e.Replication, e.Replication.TLS.Enabled())
	case stepPointAtPrimary:
		statements = MySQLReplicaStatements(e.Replication, e.Replication.TLS.Enabled())
	case stepReplicating:
		statements = []Statement{{"keeping the replica read-only", "SET GLOBAL super_read_only = ON"}}
	}
	for _, stmt := range statements {
		if _, err := db.ExecContext(ctx, stmt.SQL); err != nil {
			return fmt.Errorf("%s: %w", stmt.What, err)
		}
	}
	return nil
}

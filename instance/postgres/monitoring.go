package postgres

import "github.com/dbpilot/dbpilot/instance/layout"

// MonitoringUser is the role an exporter or a user's monitoring tool logs
// in as: it reads the statistics views and settings (pg_monitor) and
// nothing else.
const MonitoringUser = layout.MonitoringUser

// MonitoringStatements make the monitoring user exist with its password,
// a member of pg_monitor, allowed to connect to the postgres database (which
// PUBLIC may not) and to no other.
func MonitoringStatements(verifier string, exists bool) []Statement {
	verb := "CREATE"
	if exists {
		verb = "ALTER"
	}
	return []Statement{
		{"setting up the monitoring user",
			verb + " ROLE " + MonitoringUser + " WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS CONNECTION LIMIT 5 PASSWORD " + literal(verifier)},
		{"granting pg_monitor to the monitoring user", "GRANT pg_monitor TO " + MonitoringUser},
		{"letting the monitoring user connect", "GRANT CONNECT ON DATABASE postgres TO " + MonitoringUser},
		// Every session of the role is read-only: even a table created
		// by mistake with PUBLIC privileges cannot be written through it.
		{"making the monitoring user's sessions read-only", "ALTER ROLE " + MonitoringUser + " SET default_transaction_read_only = on"},
	}
}

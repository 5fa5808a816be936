package mysql

import "github.com/dbpilot/dbpilot/instance/layout"

// MonitoringUser is the account an exporter or a user's monitoring tool logs
// in as: it sees the processes, the replication state and the data
// dictionary, and writes nothing.
const MonitoringUser = layout.MonitoringUser

// MonitoringStatements make the monitoring user exist with its password and
// the privileges mysqld_exporter documents: PROCESS, REPLICATION CLIENT and
// SELECT, a few connections at most.
func MonitoringStatements(flavor Flavor, password string) []Statement {
	user := quoteString(MonitoringUser) + "@'%'"
	auth := "IDENTIFIED BY " + quoteString(password)
	if flavor == MariaDB {
		auth = "IDENTIFIED BY PASSWORD " + quoteString(nativePasswordHash(password))
	}
	return []Statement{
		{"creating the monitoring user", "CREATE USER IF NOT EXISTS " + user + " " + auth + " WITH MAX_USER_CONNECTIONS 5"},
		{"setting the monitoring user's password", "ALTER USER " + user + " " + auth},
		{"granting the monitoring user", "GRANT PROCESS, REPLICATION CLIENT, SELECT ON *.* TO " + user},
	}
}

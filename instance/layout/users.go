package layout

import "slices"

// Users dbpilot keeps for itself in every engine: the replication user
// and the monitoring user.
const (
	ReplicationUser = "dbpilot_replication"
	MonitoringUser  = "dbpilot_monitoring"
)

// ReservedUsers are the user names the application user may not have in
// engine ("postgres", "mariadb", "mysql"): dbpilot's own and the engine's
// superuser and system accounts. Applying the application user's
// attributes and password to one of them would take dbpilot's access
// away (a superuser no longer one) or stop replication.
func ReservedUsers(engine string) []string {
	if engine == "postgres" {
		return []string{"postgres", ReplicationUser, MonitoringUser}
	}
	return []string{"root", ReplicationUser, MonitoringUser, "mariadb.sys", "mysql.sys", "mysql.session", "mysql.infoschema"}
}

// IsReservedUser reports whether the application user may not be name in
// engine (ReservedUsers).
func IsReservedUser(engine, name string) bool {
	return slices.Contains(ReservedUsers(engine), name)
}

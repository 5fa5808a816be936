package layout

import "testing"

func TestReservedUsers(t *testing.T) {
	for _, tc := range []struct {
		engine, name string
		reserved     bool
	}{
		{"postgres", "postgres", true}, {"postgres", "dbpilot_replication", true}, {"postgres", "dbpilot_monitoring", true},
		{"postgres", "app", false}, {"postgres", "root", false}, {"postgres", "Postgres", false},
		{"mariadb", "root", true}, {"mariadb", "mariadb.sys", true}, {"mysql", "mysql.session", true}, {"mysql", "dbpilot_replication", true},
		{"mariadb", "app", false}, {"mariadb", "postgres", false},
	} {
		if got := IsReservedUser(tc.engine, tc.name); got != tc.reserved {
			t.Errorf("%s user %q: reserved %t, want %t", tc.engine, tc.name, got, tc.reserved)
		}
	}
}

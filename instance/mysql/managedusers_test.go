package mysql

import (
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot/instance/layout"
)

func TestManagedUserStatementsLeaveTheApplicationAndReservedUsersAlone(t *testing.T) {
	users := []layout.ManagedUser{
		{Name: "shop", Access: layout.AccessReadWrite, Password: "p"},
		{Name: "root", Locked: true},
		{Name: "dbpilot_monitoring", Locked: true},
		{Name: "report", Locked: true},
	}
	stmts := ManagedUserStatements(MariaDB, "shop", users)
	if len(stmts) != 1 || stmts[0].SQL != "ALTER USER IF EXISTS 'report'@'%' ACCOUNT LOCK" {
		t.Errorf("statements: %+v, want report locked alone", stmts)
	}
}

func TestManagedUserStatementsSendMariaDBTheHashAlone(t *testing.T) {
	for _, s := range ManagedUserStatements(MariaDB, "shop", []layout.ManagedUser{{Name: "etl", Access: layout.AccessReadOnly, Password: "clear-text"}}) {
		if strings.Contains(s.SQL, "clear-text") || strings.Contains(s.What, "clear-text") {
			t.Errorf("statement %q sends the password in clear", s.What)
		}
	}
}

func TestManagedUserStatementsSetTheConnectionLimit(t *testing.T) {
	for limit, want := range map[int32]string{0: " WITH MAX_USER_CONNECTIONS 0 ACCOUNT UNLOCK", 5: " WITH MAX_USER_CONNECTIONS 5 ACCOUNT UNLOCK"} {
		stmts := ManagedUserStatements(MariaDB, "shop", []layout.ManagedUser{{Name: "etl", Access: layout.AccessReadOnly, Password: "p", ConnectionLimit: limit}})
		if len(stmts) < 2 || !strings.HasPrefix(stmts[1].SQL, "ALTER USER 'etl'@'%'") || !strings.HasSuffix(stmts[1].SQL, want) {
			t.Errorf("limit %d: the statements are %+v, want an ALTER USER ending %q", limit, stmts, want)
		}
	}
}

func TestManagedUserStatementsOfEachAccess(t *testing.T) {
	for access, want := range map[string][]string{
		layout.AccessReadOnly:  {"GRANT SELECT ON `shop`.* TO 'etl'@'%'", "REVOKE INSERT, UPDATE, DELETE ON `shop`.* FROM 'etl'@'%'"},
		layout.AccessReadWrite: {"GRANT SELECT ON `shop`.* TO 'etl'@'%'", "GRANT INSERT, UPDATE, DELETE ON `shop`.* TO 'etl'@'%'"},
		layout.AccessConnect:   {"REVOKE SELECT, INSERT, UPDATE, DELETE ON `shop`.* FROM 'etl'@'%'"},
	} {
		stmts := ManagedUserStatements(MariaDB, "shop", []layout.ManagedUser{{Name: "etl", Access: access, Password: "p"}})
		var grants []string
		for _, s := range stmts[2:] {
			grants = append(grants, s.SQL)
			if strings.HasPrefix(s.SQL, "REVOKE") != strings.HasPrefix(s.What, revokeWhat) {
				t.Errorf("%s: %q is said to %q: a REVOKE, and nothing else, is said to begin with %q", access, s.SQL, s.What, revokeWhat)
			}
		}
		if strings.Join(grants, "; ") != strings.Join(want, "; ") {
			t.Errorf("%s: %q, want %q", access, grants, want)
		}
	}
}

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

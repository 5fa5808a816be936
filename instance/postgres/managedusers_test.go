package postgres

import (
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot/instance/layout"
)

func TestManagedUserStatementsLeaveTheApplicationAndReservedUsersAlone(t *testing.T) {
	users := []layout.ManagedUser{
		{Name: "shop", Access: layout.AccessReadOnly, Password: "p"},
		{Name: "postgres", Locked: true},
		{Name: "dbpilot_replication", Locked: true},
		{Name: "pg_monitor", Locked: true},
		{Name: "report", Locked: true},
	}
	stmts := ManagedUserStatements("shop", users, map[string]string{"shop": "v"}, map[string]bool{"shop": true, "postgres": true, "report": true, "dbpilot_replication": true})
	if len(stmts) != 1 || stmts[0].SQL != `ALTER ROLE "report" NOLOGIN` {
		t.Errorf("statements: %+v, want report locked alone", stmts)
	}
}

func TestApplicationUserCleanup(t *testing.T) {
	got := ApplicationUserCleanup("shop", []string{"pg_read_all_data"})
	want := []string{`ALTER ROLE "shop" RESET default_transaction_read_only`, `REVOKE "pg_read_all_data" FROM "shop"`}
	if len(got) != len(want) {
		t.Fatalf("statements %+v, want %v", got, want)
	}
	for i := range want {
		if got[i].SQL != want[i] {
			t.Errorf("statement %d: %s, want %s", i, got[i].SQL, want[i])
		}
	}
}

func TestManagedUserStatementsSetTheConnectionLimit(t *testing.T) {
	for limit, want := range map[int32]string{0: "CONNECTION LIMIT -1 ", 5: "CONNECTION LIMIT 5 "} {
		stmts := ManagedUserStatements("shop", []layout.ManagedUser{{Name: "etl", Access: layout.AccessReadOnly, Password: "p", ConnectionLimit: limit}}, map[string]string{"etl": "v"}, map[string]bool{"etl": true})
		if len(stmts) == 0 || !strings.HasPrefix(stmts[0].SQL, `ALTER ROLE "etl" WITH `) || !strings.Contains(stmts[0].SQL, want) {
			t.Errorf("limit %d: the first statement is %+v, want an ALTER ROLE with %q", limit, stmts, want)
		}
	}
}

func TestManagedUserStatementsSetValidUntil(t *testing.T) {
	for validUntil, want := range map[string]string{"": "VALID UNTIL 'infinity'", "2027-01-31T18:00:00Z": "VALID UNTIL '2027-01-31T18:00:00Z'"} {
		stmts := ManagedUserStatements("shop", []layout.ManagedUser{{Name: "etl", Access: layout.AccessReadOnly, Password: "p", ValidUntil: validUntil}}, map[string]string{"etl": "v"}, map[string]bool{"etl": true})
		if len(stmts) == 0 || !strings.HasPrefix(stmts[0].SQL, `ALTER ROLE "etl" WITH `) || !strings.HasSuffix(stmts[0].SQL, want) {
			t.Errorf("validUntil %q: the first statement is %+v, want an ALTER ROLE ending with %q", validUntil, stmts, want)
		}
	}
}

func TestManagedUserStatementsOfEachAccess(t *testing.T) {
	for access, want := range map[string][]string{
		layout.AccessReadOnly:  {`GRANT pg_read_all_data TO "etl"`, `REVOKE pg_write_all_data FROM "etl"`, `ALTER ROLE "etl" SET default_transaction_read_only = on`},
		layout.AccessReadWrite: {`GRANT pg_read_all_data TO "etl"`, `GRANT pg_write_all_data TO "etl"`, `ALTER ROLE "etl" RESET default_transaction_read_only`},
		layout.AccessConnect:   {`REVOKE pg_read_all_data FROM "etl"`, `REVOKE pg_write_all_data FROM "etl"`, `ALTER ROLE "etl" RESET default_transaction_read_only`},
	} {
		stmts := ManagedUserStatements("shop", []layout.ManagedUser{{Name: "etl", Access: access, Password: "p"}}, map[string]string{"etl": "v"}, map[string]bool{"etl": true})
		var grants []string
		for _, s := range stmts[2:] {
			grants = append(grants, s.SQL)
		}
		if stmts[1].SQL != `GRANT CONNECT ON DATABASE "shop" TO "etl"` || strings.Join(grants, "; ") != strings.Join(want, "; ") {
			t.Errorf("%s: %q then %q, want CONNECT then %q", access, stmts[1].SQL, grants, want)
		}
	}
}

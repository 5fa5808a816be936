package postgres

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/dbpilot/dbpilot/instance"
)

// TestSCRAMVerifier checks the verifier against one computed independently
// (Python's hashlib.pbkdf2_hmac and hmac) for RFC 7677's password and salt.
func TestSCRAMVerifier(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	got, err := scramVerifierWithSalt("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	want := "SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU="
	if got != want {
		t.Errorf("verifier\n got %s\nwant %s", got, want)
	}
	a, _ := scramVerifier("pencil")
	b, _ := scramVerifier("pencil")
	if a == b {
		t.Error("two verifiers of one password share a salt")
	}
}

func TestUserStatementsKeepTheApplicationUserUnprivileged(t *testing.T) {
	stmts := UserStatements(`o'hara"app`, "SCRAM-SHA-256$super", "SCRAM-SHA-256$app", false, false)
	var all []string
	for _, s := range stmts {
		all = append(all, s.SQL)
		if strings.Contains(s.What, "SCRAM") {
			t.Errorf("a description carries a verifier: %q", s.What)
		}
	}
	sql := strings.Join(all, ";\n")
	for _, want := range []string{
		`CREATE ROLE "o'hara""app" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD 'SCRAM-SHA-256$app'`,
		`CREATE DATABASE "o'hara""app" OWNER "o'hara""app"`,
		`ALTER ROLE postgres WITH PASSWORD 'SCRAM-SHA-256$super'`,
		`REVOKE ALL ON DATABASE "o'hara""app" FROM PUBLIC`,
		`REVOKE CONNECT ON DATABASE postgres FROM PUBLIC`,
	} {
		if !strings.Contains(sql, want) {
			t.Errorf("missing statement %s in\n%s", want, sql)
		}
	}
	again := UserStatements("app", "v1", "v2", true, true)
	for _, s := range again {
		if strings.HasPrefix(s.SQL, "CREATE") {
			t.Errorf("existing role and database are created again: %s", s.SQL)
		}
	}
}

func TestInitdbArgs(t *testing.T) {
	args := strings.Join(InitdbArgs("/data/pgdata", "/tmp/pw"), " ")
	for _, want := range []string{"--pgdata=/data/pgdata", "--username=postgres", "--pwfile=/tmp/pw", "--auth-local=peer", "--auth-host=scram-sha-256", "--data-checksums"} {
		if !strings.Contains(args, want) {
			t.Errorf("initdb args %q lack %s", args, want)
		}
	}
}

// TestSlotWALBound: the server is started with max_slot_wal_keep_size a
// quarter of its data filesystem.
func TestSlotWALBound(t *testing.T) {
	dir := t.TempDir()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("max_slot_wal_keep_size=%dMB", max(fs.Blocks*uint64(fs.Bsize)/4/(1<<20), 64))
	args := strings.Join((&Engine{DataDir: dir}).ServerCommand().Args, " ")
	if !strings.Contains(args, "-c "+want) {
		t.Errorf("server arguments %s lack %s", args, want)
	}
}

func TestStandbyConfigVerifiesThePrimaryWhenTold(t *testing.T) {
	r := Replication{PrimaryHost: "orders-rw.shop.svc", Password: "pw", SlotName: "orders_1", TLS: instance.TLS{Dir: "/dbpilot/tls"},
		PassFile: PassFile("/var/run/postgresql")}
	verified := StandbyConfig("", r, sslVerifyFull)
	if !strings.Contains(verified, "sslmode=verify-full sslrootcert=''/dbpilot/tls/ca.crt''") {
		t.Errorf("verify-full standby configuration:\n%s", verified)
	}
	// The server logs a primary_conninfo changed at a reload: it names
	// the password's file, never the password.
	if !strings.Contains(verified, "passfile=''/var/run/postgresql/.dbpilot-replication.pgpass''") || strings.Contains(verified, "pw") {
		t.Errorf("the standby configuration does not read the password from its file:\n%s", verified)
	}
	if plain := StandbyConfig("", r, ""); strings.Contains(plain, "sslmode") {
		t.Errorf("a standby configuration without an sslmode sets one:\n%s", plain)
	}
	env := r.sslEnv(sslVerifyFull)
	if strings.Join(env, " ") != "PGSSLMODE=verify-full PGSSLROOTCERT=/dbpilot/tls/ca.crt" {
		t.Errorf("environment: %v", env)
	}
}

func TestVerifiesPrimary(t *testing.T) {
	for conninfo, want := range map[string]bool{
		"host=x sslmode='verify-full' sslrootcert='/ca.crt'": true,
		"sslmode=verify-full host=x":                         true,
		"host=x sslmode = verify-full":                       true,
		"host=x sslmode=prefer":                              false,
		"host=x sslmode='verify-ca'":                         false,
		"host=x":                                             false,
		"host=x application_name=sslmode=verify-full":        false,
	} {
		if got := verifiesPrimary(conninfo); got != want {
			t.Errorf("%q: %t, want %t", conninfo, got, want)
		}
	}
}

func TestPassFileEscapesThePassword(t *testing.T) {
	r := Replication{Password: `p:w\d`, PassFile: PassFile(t.TempDir())}
	if err := r.writePassFile(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(r.PassFile)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), `*:*:*:dbpilot_replication:p\:w\\d`+"\n"; got != want {
		t.Errorf("password file %q, want %q", got, want)
	}
	if info, _ := os.Stat(r.PassFile); info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600 (libpq ignores a file others may read)", info.Mode().Perm())
	}
}

func hba(t *testing.T, rules HBARules) string {
	t.Helper()
	return HBA(rules)
}

func TestWriteHBA(t *testing.T) {
	dir := t.TempDir()
	tls := instance.TLS{Dir: filepath.Join(dir, "tls")}
	if err := os.Mkdir(tls.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{tls.CertFile(), tls.KeyFile(), tls.CAFile()} {
		if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "pg_hba.conf")
	read := func() string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	// initdb's rules, and the ones an earlier dbpilot appended.
	if err := os.WriteFile(path, []byte("local all all peer\nhost all all 127.0.0.1/32 scram-sha-256\n# dbpilot: ...\nhost all all 0.0.0.0/0 scram-sha-256\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := &Engine{DataDir: dir, TLS: tls}
	if err := e.writeHBA("app"); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != hba(t, HBARules{}) {
		t.Errorf("rules:\n%s", got)
	}
	e.RequireTLS = true
	if err := e.writeHBA("app"); err != nil {
		t.Fatal(err)
	}
	required := read()
	for _, line := range strings.Split(strings.TrimSpace(required), "\n") {
		if !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "local ") && !strings.HasPrefix(line, "hostssl ") {
			t.Errorf("a rule that lets a network connection in without TLS: %q", line)
		}
	}
	for _, rule := range []string{"hostssl all all 0.0.0.0/0 scram-sha-256", "hostssl replication dbpilot_replication ::/0 scram-sha-256", "local all all peer"} {
		if !strings.Contains(required, rule+"\n") {
			t.Errorf("no rule %q:\n%s", rule, required)
		}
	}
	// Without a certificate mounted, requiring TLS would lock every
	// client out: the rules stay open.
	e.TLS = instance.TLS{}
	if err := e.writeHBA("app"); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != hba(t, HBARules{}) {
		t.Errorf("rules without a certificate:\n%s", got)
	}
	// Requiring the client certificate without the client authority
	// mounted refuses the application user on the network, and the
	// rules still load (clientcert needs ssl_ca_file).
	e = &Engine{DataDir: dir, TLS: tls, RequireClientCertificate: true}
	if err := e.writeHBA("app"); err != nil {
		t.Fatal(err)
	}
	if got := read(); strings.Contains(got, "clientcert") || !strings.Contains(got, `host all "app" 0.0.0.0/0 reject`+"\n") {
		t.Errorf("rules without the client authority:\n%s", got)
	}
	if err := os.WriteFile(tls.ClientCAFile(), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Decided once a start: the server's arguments and its rules agree
	// whenever the kubelet adds the file.
	if err := e.writeHBA("app"); err != nil {
		t.Fatal(err)
	}
	if got := read(); strings.Contains(got, "clientcert") || slices.Contains(TLSArgs(tls, e.verifiesClients()), "ssl_ca_file="+tls.ClientCAFile()) {
		t.Errorf("the client authority mounted after the start changed the rules:\n%s", got)
	}
	e = &Engine{DataDir: dir, TLS: tls, RequireClientCertificate: true}
	if !slices.Contains(TLSArgs(tls, e.verifiesClients()), "ssl_ca_file="+tls.ClientCAFile()) {
		t.Errorf("the next start does not verify client certificates: %v", TLSArgs(tls, e.verifiesClients()))
	}
	if err := e.writeHBA("app"); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != hba(t, HBARules{CertificateUser: "app", VerifiesClients: true}) {
		t.Errorf("rules with the client authority:\n%s", got)
	}
	// No data directory yet: nothing to write.
	if err := (&Engine{DataDir: filepath.Join(dir, "none")}).writeHBA("app"); err != nil {
		t.Errorf("without data: %v", err)
	}
}

// TestHBAAsksTheApplicationUserForItsCertificateFirst checks that the
// first rule matching each of the application user's network connections
// (pg_hba.conf's order) wants its certificate, or refuses it, while the
// other users' stay as they were.
func TestHBAAsksTheApplicationUserForItsCertificateFirst(t *testing.T) {
	firstMatch := func(rules, kind, user, address string) string {
		for _, line := range strings.Split(rules, "\n") {
			fields := strings.Fields(line)
			if len(fields) < 5 || fields[1] != "all" || fields[3] != address {
				continue
			}
			if (fields[0] == kind || fields[0] == "host") && (fields[2] == "all" || fields[2] == `"`+user+`"`) {
				return strings.Join(fields[4:], " ")
			}
		}
		return "no rule"
	}
	for _, tlsRequired := range []bool{false, true} {
		rules := hba(t, HBARules{RequireTLS: tlsRequired, CertificateUser: "app", VerifiesClients: true})
		for _, address := range []string{"0.0.0.0/0", "::/0"} {
			if got := firstMatch(rules, "hostssl", "app", address); got != "scram-sha-256 clientcert=verify-full" {
				t.Errorf("TLS required %v: the application user over TLS from %s: %q", tlsRequired, address, got)
			}
			if got := firstMatch(rules, "hostnossl", "app", address); got != "reject" {
				t.Errorf("TLS required %v: the application user without TLS from %s: %q", tlsRequired, address, got)
			}
			if got := firstMatch(rules, "hostssl", "reporting", address); got != "scram-sha-256" {
				t.Errorf("TLS required %v: another user over TLS from %s: %q", tlsRequired, address, got)
			}
		}
	}
	// Without the client authority, the application user is refused on
	// the network whatever the connection; the others are let in.
	rules := hba(t, HBARules{CertificateUser: "app"})
	for _, kind := range []string{"hostssl", "hostnossl"} {
		for _, address := range []string{"0.0.0.0/0", "::/0"} {
			if got := firstMatch(rules, kind, "app", address); got != "reject" {
				t.Errorf("without the client authority: the application user (%s from %s): %q", kind, address, got)
			}
			if got := firstMatch(rules, kind, "reporting", address); got != "scram-sha-256" {
				t.Errorf("without the client authority: another user (%s from %s): %q", kind, address, got)
			}
		}
	}
	// A name pg_hba.conf cannot quote: every user but replication is
	// refused on the network, rather than the server not starting.
	unquotable := hba(t, HBARules{CertificateUser: `a"b`, VerifiesClients: true})
	if strings.Contains(unquotable, `a"b`) {
		t.Errorf("a user name with a double quote was written:\n%s", unquotable)
	}
	for _, kind := range []string{"hostssl", "hostnossl"} {
		if got := firstMatch(unquotable, kind, "reporting", "0.0.0.0/0"); got != "reject" {
			t.Errorf("with an unquotable user name, a user (%s): %q", kind, got)
		}
	}
	if !strings.Contains(unquotable, "host replication dbpilot_replication 0.0.0.0/0 scram-sha-256\n") {
		t.Errorf("with an unquotable user name, replication is refused:\n%s", unquotable)
	}
}

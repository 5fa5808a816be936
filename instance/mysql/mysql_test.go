package mysql

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot/instance"
)

// TestNativePasswordHash checks the hash against MySQL's documented example
// (PASSWORD('mypass')).
func TestNativePasswordHash(t *testing.T) {
	if got := nativePasswordHash("mypass"); got != "*6C8989366EAF75BB670AD8EA7A7FC1176A95CEF4" {
		t.Errorf("hash of mypass = %s", got)
	}
}

func TestBootstrapCommands(t *testing.T) {
	maria := &Engine{Flavor: MariaDB, DataDir: "/var/lib/mysql"}
	name, args := maria.BootstrapCommand("mysql")
	if name != "mariadb-install-db" || !strings.Contains(strings.Join(args, " "), "--auth-root-socket-user=mysql") {
		t.Errorf("MariaDB bootstrap: %s %v", name, args)
	}
	mysql := &Engine{Flavor: MySQL, DataDir: "/var/lib/mysql", DefaultsFile: "/etc/my.cnf"}
	name, args = mysql.BootstrapCommand("mysql")
	if name != "mysqld" || args[0] != "--defaults-file=/etc/my.cnf" || !strings.Contains(strings.Join(args, " "), "--initialize-insecure --datadir=/var/lib/mysql") {
		t.Errorf("MySQL bootstrap: %s %v", name, args)
	}
	if cmd := mysql.ServerCommand(); !strings.HasSuffix(cmd.Path, "mysqld") && cmd.Args[0] != "mysqld" {
		t.Errorf("MySQL server command: %v", cmd.Args)
	}
}

func TestUserStatements(t *testing.T) {
	creds := instance.Credentials{Username: "shop`app", Password: "p'w", SuperuserPassword: `s\x`}
	join := func(stmts []Statement) string {
		var all []string
		for _, s := range stmts {
			all = append(all, s.SQL)
		}
		return strings.Join(all, ";\n")
	}
	maria := join(UserStatements(MariaDB, creds, false))
	for _, want := range []string{
		"CREATE USER IF NOT EXISTS 'shop`app'@'%' IDENTIFIED BY PASSWORD '" + nativePasswordHash("p'w") + "'",
		"GRANT ALL PRIVILEGES ON `shop``app`.* TO 'shop`app'@'%' WITH GRANT OPTION",
		"ALTER USER 'root'@'localhost' IDENTIFIED VIA unix_socket OR mysql_native_password USING '" + nativePasswordHash(`s\x`) + "'",
	} {
		if !strings.Contains(maria, want) {
			t.Errorf("MariaDB statements lack %s:\n%s", want, maria)
		}
	}
	if strings.Contains(maria, "p''w") || strings.Contains(maria, `s\\x`) {
		t.Errorf("MariaDB statements carry a password in clear:\n%s", maria)
	}
	mysql := join(UserStatements(MySQL, creds, false))
	for _, want := range []string{
		"ALTER USER 'root'@'localhost' IDENTIFIED BY 's\\\\x'",
		"ALTER USER 'shop`app'@'%' IDENTIFIED BY 'p''w' ACCOUNT UNLOCK",
		"CREATE DATABASE IF NOT EXISTS `shop``app`",
	} {
		if !strings.Contains(mysql, want) {
			t.Errorf("MySQL statements lack %s:\n%s", want, mysql)
		}
	}
	if strings.Contains(mysql, "ALL PRIVILEGES ON *.*") || strings.Contains(maria, "ALL PRIVILEGES ON *.*") {
		t.Error("the application user gets privileges on every database")
	}
	for flavor, statements := range map[Flavor]string{MariaDB: maria, MySQL: mysql} {
		if !strings.Contains(statements, "'shop`app'@'%' IDENTIFIED BY") || !strings.Contains(statements, " REQUIRE NONE") || strings.Contains(statements, "REQUIRE SUBJECT") {
			t.Errorf("%s: the application user is asked for a certificate it does not need:\n%s", flavor, statements)
		}
		required := join(UserStatements(flavor, creds, true))
		if !strings.Contains(required, "ALTER USER IF EXISTS 'shop`app'@'%' REQUIRE SUBJECT '/CN=shop`app'") || strings.Contains(required, "REQUIRE NONE") {
			t.Errorf("%s: the application user is not asked for its certificate:\n%s", flavor, required)
		}
	}
}

// TestReplicaDataStartsReadOnly: a cloned datadir, or one pointed at a
// primary, starts read-only; a primary's does not.
func TestReplicaDataStartsReadOnly(t *testing.T) {
	for _, tc := range []struct {
		file     string
		readOnly bool
	}{{"", false}, {cloneGTIDFile, true}, {masterInfoFile, true}} {
		dir := t.TempDir()
		if tc.file != "" {
			if err := os.WriteFile(filepath.Join(dir, tc.file), []byte("0-1-5"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		e := &Engine{Flavor: MariaDB, DataDir: dir}
		args := strings.Join(e.ServerCommand().Args, " ")
		if got := strings.Contains(args, "--read-only=ON"); got != tc.readOnly {
			t.Errorf("datadir with %q: server %s", tc.file, args)
		}
	}
}

// TestMonitoringStatements: MySQL gets the password for its default
// authentication plugin, MariaDB a native hash; both the exporter's three
// privileges and nothing more; the password itself never appears in a
// MariaDB statement.
func TestMonitoringStatements(t *testing.T) {
	for _, flavor := range []Flavor{MySQL, MariaDB} {
		var all []string
		for _, s := range MonitoringStatements(flavor, "m'pw") {
			all = append(all, s.SQL)
		}
		joined := strings.Join(all, "\n")
		if !strings.Contains(joined, "GRANT PROCESS, REPLICATION CLIENT, SELECT ON *.* TO 'dbpilot_monitoring'@'%'") {
			t.Errorf("%s: grants:\n%s", flavor, joined)
		}
		hasPlain := strings.Contains(joined, "IDENTIFIED BY 'm''pw'")
		if hasPlain != (flavor == MySQL) {
			t.Errorf("%s: password form:\n%s", flavor, joined)
		}
	}
}

// TestMySQLClonePath: a new MySQL replica clones its primary from the
// allowed donor as the replication user, then replicates by GTID
// auto-positioning and turns super_read_only, over TLS when the
// certificate is mounted; the primary's replication user may be cloned
// (BACKUP_ADMIN). Unit-tested only: no MySQL server here.
func TestMySQLClonePath(t *testing.T) {
	r := Replication{CloneFrom: "orders-rw.shop.svc", Port: 3306, Password: "r'pw"}
	join := func(stmts []Statement) string {
		var all []string
		for _, s := range stmts {
			all = append(all, s.SQL)
		}
		return strings.Join(all, "\n")
	}
	clone := join(CloneStatements(r, false))
	for _, want := range []string{
		"SET GLOBAL clone_valid_donor_list = 'orders-rw.shop.svc:3306'",
		"CLONE INSTANCE FROM 'dbpilot_replication'@'orders-rw.shop.svc':3306 IDENTIFIED BY 'r''pw'",
	} {
		if !strings.Contains(clone, want) {
			t.Errorf("clone statements lack %q:\n%s", want, clone)
		}
	}
	replica := join(MySQLReplicaStatements(r, false))
	for _, want := range []string{
		"CHANGE REPLICATION SOURCE TO SOURCE_HOST='orders-rw.shop.svc', SOURCE_PORT=3306, SOURCE_USER='dbpilot_replication', SOURCE_PASSWORD='r''pw', SOURCE_AUTO_POSITION=1",
		"START REPLICA",
		"SET GLOBAL super_read_only = ON",
	} {
		if !strings.Contains(replica, want) {
			t.Errorf("replica statements lack %q:\n%s", want, replica)
		}
	}
	if strings.Contains(clone+replica, "SSL") {
		t.Errorf("TLS without the certificate:\n%s\n%s", clone, replica)
	}
	// With the Database's certificate mounted: the clone encrypted, the
	// replication verifying the primary.
	r.TLS = instance.TLS{Dir: "/dbpilot/tls"}
	if clone := join(CloneStatements(r, true)); !strings.Contains(clone, "IDENTIFIED BY 'r''pw' REQUIRE SSL") {
		t.Errorf("clone over TLS:\n%s", clone)
	}
	if replica := join(MySQLReplicaStatements(r, true)); !strings.Contains(replica, "SOURCE_CONNECT_RETRY=5, SOURCE_SSL=1, SOURCE_SSL_CA='/dbpilot/tls/ca.crt', SOURCE_SSL_VERIFY_SERVER_CERT=1") {
		t.Errorf("replication over TLS:\n%s", replica)
	}
	if user := join(MySQLReplicationUserStatements("r'pw")); !strings.Contains(user, "GRANT REPLICATION SLAVE, REPLICATION CLIENT, BACKUP_ADMIN ON *.* TO 'dbpilot_replication'@'%'") {
		t.Errorf("replication user:\n%s", user)
	}
	for _, tc := range []struct {
		cloneState string
		configured bool
		want       mysqlReplicaStep
		fails      bool
	}{
		{"", false, stepClone, false},
		{"Failed", false, stepClone, false},
		{"In Progress", false, 0, true},
		{"Completed", false, stepPointAtPrimary, false},
		{"Completed", true, stepReplicating, false},
	} {
		got, err := nextMySQLReplicaStep(tc.cloneState, tc.configured)
		if (err != nil) != tc.fails || got != tc.want {
			t.Errorf("clone %q, configured %t: step %d (%v), want %d", tc.cloneState, tc.configured, got, err, tc.want)
		}
	}
}

func TestUnusableReason(t *testing.T) {
	if got := unusableReason(map[string]string{"Last_IO_Errno": "1236", "Last_IO_Error": "Got fatal error 1236 from master"}); !strings.Contains(got, "no longer hold") {
		t.Errorf("error 1236: %q", got)
	}
	if got := unusableReason(map[string]string{"Last_IO_Errno": "2003", "Last_IO_Error": "can't connect"}); got != "" {
		t.Errorf("a primary that cannot be reached is no reason to clone again: %q", got)
	}
}

func TestReplicaStatementsVerifyThePrimaryWhenTold(t *testing.T) {
	r := Replication{CloneFrom: "orders-rw.shop.svc", Port: 3306, Password: "pw", TLS: instance.TLS{Dir: "/dbpilot/tls"}}
	verified := "MASTER_SSL=1, MASTER_SSL_CA='/dbpilot/tls/ca.crt', MASTER_SSL_VERIFY_SERVER_CERT=1"
	for name, stmts := range map[string][]Statement{
		"clone":  ReplicaStatements(r, "0-1-5", true),
		"rejoin": RejoinStatements(r, true),
	} {
		if sql := stmts[len(stmts)-2].SQL; !strings.HasSuffix(sql, ", "+verified) {
			t.Errorf("%s: %s", name, sql)
		}
	}
	for name, stmts := range map[string][]Statement{
		"clone":  ReplicaStatements(r, "0-1-5", false),
		"rejoin": RejoinStatements(r, false),
	} {
		for _, s := range stmts {
			if strings.Contains(s.SQL, "MASTER_SSL") {
				t.Errorf("%s without TLS: %s", name, s.SQL)
			}
		}
	}
	// Switching a running replica keeps where it replicates from: no
	// host (which would reset its position) and no GTID mode.
	switched := SecureReplicationStatements(r)
	if switched[1].SQL != "CHANGE MASTER TO "+verified || switched[0].SQL != "STOP SLAVE" || switched[2].SQL != "START SLAVE" {
		t.Errorf("switching to TLS: %+v", switched)
	}
}

// TestClientCertificatesVerifiedOnlyWithTheClientAuthority: the server
// verifies client certificates with the mounted client authority, and
// with none (an empty ssl-capath, not the system's store, not the
// server's authority) while it is not mounted.
func TestClientCertificatesVerifiedOnlyWithTheClientAuthority(t *testing.T) {
	dir := t.TempDir()
	files := instance.TLS{Dir: dir}
	for _, file := range []string{files.CertFile(), files.KeyFile(), files.CAFile()} {
		if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := t.TempDir()
	e := &Engine{Flavor: MariaDB, DataDir: t.TempDir(), Socket: filepath.Join(run, "mysqld.sock"), TLS: files}
	args := strings.Join(e.ServerCommand().Args, " ")
	empty := filepath.Join(run, "no-client-authorities")
	if strings.Contains(args, "--ssl-ca=") || !strings.Contains(args, "--ssl-capath="+empty) {
		t.Errorf("without the client authority: %s", args)
	}
	if entries, err := os.ReadDir(empty); err != nil || len(entries) != 0 {
		t.Errorf("the ssl-capath directory: %v, %v", entries, err)
	}
	if verifies, _ := e.VerifiesClients(); verifies {
		t.Error("the server is said to verify client certificates without the client authority")
	}
	if err := os.WriteFile(files.ClientCAFile(), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	args = strings.Join(e.ServerCommand().Args, " ")
	if !strings.Contains(args, "--ssl-ca="+files.ClientCAFile()) || strings.Contains(args, "--ssl-capath") {
		t.Errorf("with the client authority: %s", args)
	}
	if verifies, _ := e.VerifiesClients(); !verifies {
		t.Error("the server is said not to verify client certificates with the client authority")
	}
}

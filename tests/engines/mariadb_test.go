package engines_test

import (
	"bufio"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// mariadbVariables parses the variable table of `mariadbd --help --verbose`.
func mariadbVariables(out string) map[string]string {
	vars := map[string]string{}
	scanner := bufio.NewScanner(strings.NewReader(out))
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) == 2 {
			vars[fields[0]] = fields[1]
		}
	}
	return vars
}

// startMariaDB creates the system tables in datadir (root without a
// password) and starts mariadbd on config as the service user, on 127.0.0.1
// and a socket in dir; it returns the port and the socket.
func startMariaDB(t *testing.T, mysql serviceUser, dir, datadir, config string, args ...string) (int, string) {
	t.Helper()
	if _, err := output(mysql.command("mariadb-install-db", "--no-defaults", "--datadir="+datadir, "--skip-test-db", "--auth-root-authentication-method=normal")); err != nil {
		t.Fatalf("mariadb-install-db: %v", err)
	}
	port := freePort(t)
	socket := filepath.Join(dir, "mysqld.sock")
	startServer(t, mysql.command("mariadbd", append([]string{"--defaults-file=" + config, "--datadir=" + datadir, "--socket=" + socket,
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--pid-file=" + filepath.Join(dir, "mysqld.pid")}, args...)...),
		filepath.Join(dir, "mariadb.log"))
	return port, socket
}

// TestMariaDBAcceptsEveryTierConfig has mariadbd read the configuration of
// every tier (an unknown option fails), checks the tuned values it reports,
// then starts a server on the small tier's configuration and reads them back
// over a connection. MySQL reads the same [mysqld] options.
func TestMariaDBAcceptsEveryTierConfig(t *testing.T) {
	mysql := lookupUser(t, "mysql")
	dir := mysql.tempDir(t)
	datadir := filepath.Join(dir, "data")

	for _, tier := range dbpilotv1alpha1.Tiers() {
		db := database(dbpilotv1alpha1.EngineMariaDB, tier)
		config := writeConfig(t, dir, db)
		out, err := output(mysql.command("mariadbd", "--defaults-file="+config, "--datadir="+datadir, "--help", "--verbose"))
		if err != nil {
			t.Fatalf("tier %s: MariaDB rejects the configuration: %v", tier, err)
		}
		vars := mariadbVariables(out)
		size, _ := tier.Size()
		if got := vars["max-connections"]; got != strconv.Itoa(int(size.MaxConnections)) {
			t.Errorf("tier %s: max-connections = %s, want %d", tier, got, size.MaxConnections)
		}
		if vars["innodb-buffer-pool-size"] == "" || vars["innodb-buffer-pool-size"] == "134217728" {
			t.Errorf("tier %s: innodb-buffer-pool-size left at the default (%s)", tier, vars["innodb-buffer-pool-size"])
		}
	}

	db := database(dbpilotv1alpha1.EngineMariaDB, dbpilotv1alpha1.TierSmall)
	config := writeConfig(t, dir, db)
	port, _ := startMariaDB(t, mysql, dir, datadir, config)
	query := func(sql string) (string, error) {
		out, err := output(mysql.command("mariadb", "--no-defaults", "--protocol=tcp", "-h", "127.0.0.1", "-P", strconv.Itoa(port), "-uroot", "-N", "-B", "-e", sql))
		return strings.TrimSpace(out), err
	}
	eventually(t, 60*time.Second, func() error { _, err := query("SELECT 1"); return err })
	got, err := query("SELECT @@max_connections, @@innodb_buffer_pool_size, @@log_bin, @@skip_name_resolve")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("100\t%d\t1\t1", 512*1024*1024); got != want {
		t.Errorf("server variables = %q, want %q", got, want)
	}
}

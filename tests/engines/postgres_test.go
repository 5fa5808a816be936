package engines_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

const postgresBin = "/usr/lib/postgresql/15/bin"

// initPostgres creates a data directory owned by the postgres user.
func initPostgres(t *testing.T, pg serviceUser) (dir, pgdata string) {
	t.Helper()
	dir = pg.tempDir(t)
	pgdata = filepath.Join(dir, "pgdata")
	if _, err := output(pg.command(filepath.Join(postgresBin, "initdb"), "-D", pgdata, "-U", "postgres", "--auth=trust")); err != nil {
		t.Fatalf("initdb: %v", err)
	}
	return dir, pgdata
}

// postgresArgs points the rendered configuration at a test data directory
// and loopback port; command-line settings override the file's.
func postgresArgs(config, pgdata string, port int, socketDir string) []string {
	return []string{
		"-c", "config_file=" + config,
		"-c", "data_directory=" + pgdata,
		"-c", "hba_file=" + filepath.Join(pgdata, "pg_hba.conf"),
		"-c", "ident_file=" + filepath.Join(pgdata, "pg_ident.conf"),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port=" + strconv.Itoa(port),
		"-c", "unix_socket_directories=" + socketDir,
	}
}

// TestPostgresAcceptsEveryTierConfig has PostgreSQL parse the configuration
// of every tier (postgres -C checks names, units and ranges without
// starting), then starts a server on the small tier's configuration and reads
// the tuned values back over a connection.
func TestPostgresAcceptsEveryTierConfig(t *testing.T) {
	pg := lookupUser(t, "postgres")
	dir, pgdata := initPostgres(t, pg)

	for _, tier := range dbpilotv1alpha1.Tiers() {
		db := database(dbpilotv1alpha1.EnginePostgres, tier)
		config := writeConfig(t, dir, db)
		size, _ := tier.Size()
		args := append([]string{"-D", pgdata, "-C", "max_connections"}, postgresArgs(config, pgdata, 5432, dir)...)
		out, err := output(pg.command(filepath.Join(postgresBin, "postgres"), args...))
		if err != nil {
			t.Fatalf("tier %s: PostgreSQL rejects the configuration: %v", tier, err)
		}
		if got := strings.TrimSpace(out); got != strconv.Itoa(int(size.MaxConnections)) {
			t.Errorf("tier %s: max_connections = %s, want %d", tier, got, size.MaxConnections)
		}
	}

	db := database(dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.TierSmall)
	config := writeConfig(t, dir, db)
	port := freePort(t)
	startServer(t, pg.command(filepath.Join(postgresBin, "postgres"), append([]string{"-D", pgdata}, postgresArgs(config, pgdata, port, dir)...)...), filepath.Join(dir, "postgres.log"))
	show := func(setting string) (string, error) {
		out, err := output(pg.command(filepath.Join(postgresBin, "psql"), "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres", "-tAc", "SHOW "+setting))
		return strings.TrimSpace(out), err
	}
	eventually(t, 30*time.Second, func() error { _, err := show("server_version"); return err })
	for setting, want := range map[string]string{
		"max_connections": "100", "shared_buffers": "256MB", "effective_cache_size": "768MB",
		"wal_level": "replica", "password_encryption": "scram-sha-256",
	} {
		got, err := show(setting)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("SHOW %s = %s, want %s", setting, got, want)
		}
	}
	if got, _ := show("config_file"); got != config {
		t.Errorf("server runs %s, not the rendered configuration %s", got, config)
	}
}

package engines_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
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

// TestPostgresReadsParametersAsWritten has PostgreSQL read values of
// spec.parameters, rendered as the ConfigMap carries them and as the
// instance program writes them (postgresql.auto.conf), and print each back
// unchanged: quotes, backslashes, comment and list characters, non-ASCII.
func TestPostgresReadsParametersAsWritten(t *testing.T) {
	pg := lookupUser(t, "postgres")
	dir, pgdata := initPostgres(t, pg)
	config := writeConfig(t, dir, database(dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.TierSmall))
	for _, tc := range []struct{ name, value string }{
		{"log_line_prefix", `%m [%p] it's \n a 'quoted' \\ # not a comment; `},
		{"log_line_prefix", "é€😀"},
		{"log_line_prefix", ""},
		{"search_path", `"$user", public`},
		{"shared_preload_libraries", "pg_stat_statements,auto_explain"},
	} {
		rendered := desired.PostgresParameters(map[string]dbpilotv1alpha1.ParameterValue{tc.name: dbpilotv1alpha1.ParameterValue(tc.value)})
		if err := os.WriteFile(filepath.Join(pgdata, "postgresql.auto.conf"), []byte(rendered), 0o600); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"-D", pgdata, "-C", tc.name}, postgresArgs(config, pgdata, 5432, dir)...)
		out, err := output(pg.command(filepath.Join(postgresBin, "postgres"), args...))
		if err != nil {
			t.Fatalf("%s = %q, rendered %q: PostgreSQL refuses it: %v", tc.name, tc.value, rendered, err)
		}
		if got := strings.TrimSuffix(out, "\n"); got != tc.value {
			t.Errorf("%s: PostgreSQL reads %q from %q, want %q", tc.name, got, rendered, tc.value)
		}
	}
}

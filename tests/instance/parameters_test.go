package instance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPostgresParameters runs the instance program with a parameters file
// beside its configuration, as the Database's ConfigMap mounts
// spec.parameters: they apply before the first start and as the file
// changes, a file the server would refuse changes nothing (not even at the
// next start) and is reported, and a setting dropped from the file is
// reset while one made by hand stays.
func TestPostgresParameters(t *testing.T) {
	pg := lookup(t, "postgres")
	ctx := context.Background()
	dir := pg.workDir(t)
	creds := pg.mkdir(t, filepath.Join(dir, "credentials"))
	sockets := pg.mkdir(t, filepath.Join(dir, "run"))
	port := freePort(t)
	credentials(t, pg, creds, "shop", "app-pass", "super-pass")
	pg.writeFile(t, filepath.Join(dir, "postgresql.conf"), fmt.Sprintf(
		"listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nshared_buffers = 32MB\n", port, sockets))
	parameters := filepath.Join(dir, "parameters.conf")
	pg.writeFile(t, parameters, "work_mem = '64MB'\nshared_preload_libraries = 'pg_stat_statements'\n")
	args := []string{"--engine=postgres", "--data-dir=" + filepath.Join(dir, "pgdata"),
		"--config-file=" + filepath.Join(dir, "postgresql.conf"), "--socket=" + sockets,
		"--port=" + strconv.Itoa(port), "--credentials-dir=" + creds}
	path := "/usr/lib/postgresql/15/bin:/usr/bin:/bin"
	p := start(t, pg, path, args...)

	show := func(name string) string {
		t.Helper()
		conn, err := pgConnect(ctx, port, "postgres", "super-pass", "postgres")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var value string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&value); err != nil {
			t.Fatal(err)
		}
		return value
	}
	// Applied before the first start: a library to preload needs no
	// restart then.
	if got := show("work_mem"); got != "64MB" {
		t.Errorf("work_mem at the first start: %s, want 64MB", got)
	}
	if got := show("shared_preload_libraries"); got != "pg_stat_statements" {
		t.Errorf("shared_preload_libraries at the first start: %q", got)
	}
	conn, err := pgConnect(ctx, port, "postgres", "super-pass", "postgres")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "ALTER SYSTEM SET statement_timeout = '42s'"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	// An invalid value and an unknown name: nothing changes, and the
	// status says what the server refused.
	// (The server looks at values once it knows every name.)
	pg.writeFile(t, parameters, "work_mem = '1MB'\nwrok_mem = '1MB'\nshared_preload_libraries = 'pg_stat_statements'\n")
	p.awaitRefusal(t, "the unknown name is reported", `unrecognized configuration parameter "wrok_mem"`)
	pg.writeFile(t, parameters, "work_mem = 'lots'\nshared_preload_libraries = 'pg_stat_statements'\n")
	p.awaitRefusal(t, "the invalid value is reported", `invalid value for parameter "work_mem": "lots"`)
	if got := show("work_mem"); got != "64MB" {
		t.Errorf("work_mem after a refused file: %s, want 64MB", got)
	}
	// Nor at the next start, which a file with these settings would fail.
	p.stop(t)
	p = start(t, pg, path, args...)
	if got := show("work_mem"); got != "64MB" {
		t.Errorf("work_mem after a restart with a refused file: %s, want 64MB", got)
	}
	if got := p.reported(t, "parametersError"); !strings.Contains(got, `"work_mem": "lots"`) {
		t.Errorf("after the restart, parametersError %q", got)
	}

	// A library that is not installed: the server would not start.
	pg.writeFile(t, parameters, "work_mem = '32MB'\nshared_preload_libraries = 'pg_stat_statements,no_such_library'\n")
	p.awaitRefusal(t, "the missing library is reported", `"no_such_library"`)
	if got := show("work_mem"); got != "64MB" {
		t.Errorf("work_mem after a refused file: %s, want 64MB", got)
	}

	// A library every new session loads that is there but does not
	// load: applied, then taken back once a new session fails, and the
	// program's own sessions (and the application's) work again.
	fake := filepath.Join(dir, "fake.so")
	pg.writeFile(t, fake, "not a shared object")
	pg.writeFile(t, parameters, fmt.Sprintf("work_mem = '16MB'\nsession_preload_libraries = '%s'\n", fake))
	eventually(t, 30*time.Second, "the settings are taken back", func() error {
		// /status fails while the settings refuse sessions.
		resp, err := p.client.Get(strings.Replace(p.probe, "/readyz", "/status", 1))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var status struct{ ParametersError string }
		if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
			return err
		}
		if !strings.Contains(status.ParametersError, "a new session fails with them") {
			return fmt.Errorf("parametersError %q", status.ParametersError)
		}
		return nil
	})
	if got := show("work_mem"); got != "64MB" {
		t.Errorf("work_mem after the settings were taken back: %s, want 64MB", got)
	}

	// Settings dropped from the file are reset, the new ones apply at
	// once or wait for a restart, and a setting made by hand stays.
	pg.writeFile(t, parameters, "log_min_duration_statement = '250ms'\nmax_locks_per_transaction = '128'\n")
	eventually(t, 30*time.Second, "the new file applies", func() error {
		if got := show("log_min_duration_statement"); got != "250ms" {
			return fmt.Errorf("log_min_duration_statement %s", got)
		}
		if got := p.reported(t, "parametersError"); got != "<nil>" {
			return fmt.Errorf("parametersError %q", got)
		}
		return nil
	})
	if got := show("work_mem"); got != "4MB" {
		t.Errorf("work_mem dropped from the file: %s, want the default 4MB", got)
	}
	if got := show("statement_timeout"); got != "42s" {
		t.Errorf("statement_timeout set by hand: %s, want 42s", got)
	}
	pending, _ := p.status(t)["pendingRestart"].([]any)
	var names []string
	for _, n := range pending {
		names = append(names, fmt.Sprint(n))
	}
	if !slices.Contains(names, "max_locks_per_transaction") || !slices.Contains(names, "shared_preload_libraries") {
		t.Errorf("pendingRestart %v, want max_locks_per_transaction and shared_preload_libraries", names)
	}
	p.stop(t)
	p = start(t, pg, path, args...)
	if got := show("max_locks_per_transaction"); got != "128" {
		t.Errorf("max_locks_per_transaction after the restart: %s, want 128", got)
	}
	if got := show("shared_preload_libraries"); got != "" {
		t.Errorf("shared_preload_libraries after the restart: %q, want none", got)
	}
	p.stop(t)
}

// TestMariaDBParameters is TestPostgresParameters for MariaDB, whose
// parameters file is JSON and whose server takes the set on its command
// line: a running server sets the changed variables online, and reports
// the ones it only takes at a start.
func TestMariaDBParameters(t *testing.T) {
	my := lookup(t, "mysql")
	ctx := context.Background()
	dir := my.workDir(t)
	creds := my.mkdir(t, filepath.Join(dir, "credentials"))
	run := my.mkdir(t, filepath.Join(dir, "run"))
	port := freePort(t)
	credentials(t, my, creds, "shop", "app-pass", "super-pass")
	config := filepath.Join(dir, "my.cnf")
	my.writeFile(t, config, fmt.Sprintf("[mysqld]\nbind-address = 127.0.0.1\nport = %d\nskip-name-resolve\ninnodb_buffer_pool_size = 64M\nlong_query_time = 3\n", port))
	parameters := filepath.Join(dir, "parameters.json")
	my.writeFile(t, parameters, `{"max_allowed_packet": "64M", "long_query_time": "2.5"}`)
	args := []string{"--engine=mariadb", "--data-dir=" + filepath.Join(dir, "data"),
		"--socket=" + filepath.Join(run, "mysqld.sock"), "--defaults-file=" + config, "--config-file=" + config,
		"--credentials-dir=" + creds}
	path := "/usr/sbin:/usr/bin:/bin"
	p := start(t, my, path, args...)

	variable := func(name string) string {
		t.Helper()
		db, err := mysqlConnect(ctx, port, "shop", "app-pass", "shop")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var value string
		if err := db.QueryRowContext(ctx, "SELECT @@global."+name).Scan(&value); err != nil {
			t.Fatal(err)
		}
		return value
	}
	if got := variable("max_allowed_packet"); got != "67108864" {
		t.Errorf("max_allowed_packet at the first start: %s, want 67108864", got)
	}
	if got := variable("long_query_time"); got != "2.5" {
		t.Errorf("long_query_time at the first start: %s, want 2.5 (over the configuration's 3)", got)
	}

	// An unknown name, then an invalid value: nothing changes.
	my.writeFile(t, parameters, `{"max_allowed_packet": "32M", "wrong_variable": "1"}`)
	p.awaitRefusal(t, "the unknown name is reported", "unknown variable 'wrong_variable=1'")
	my.writeFile(t, parameters, `{"max_allowed_packet": "lots"}`)
	p.awaitRefusal(t, "the invalid value is reported", "Error while setting value 'lots' to 'max_allowed_packet'")
	if got := variable("max_allowed_packet"); got != "67108864" {
		t.Errorf("max_allowed_packet after refused sets: %s, want 67108864", got)
	}
	p.stop(t)
	p = start(t, my, path, args...)
	if got := variable("max_allowed_packet"); got != "67108864" {
		t.Errorf("max_allowed_packet after a restart with a refused set: %s, want 67108864", got)
	}
	if got := p.reported(t, "parametersError"); !strings.Contains(got, "'lots'") {
		t.Errorf("after the restart, parametersError %q", got)
	}

	// Online where the server allows it, a dropped variable back to the
	// configuration's value, a static one and a value the running server
	// refuses (event_scheduler takes DISABLED only at a start) waiting for
	// the next start.
	my.writeFile(t, parameters, `{"long_query_time": "5", "back_log": "100", "sql_mode": "STRICT_ALL_TABLES,NO_ZERO_DATE", "event_scheduler": "DISABLED"}`)
	eventually(t, 30*time.Second, "the new set applies", func() error {
		if got := variable("long_query_time"); got != "5" {
			return fmt.Errorf("long_query_time %s", got)
		}
		if got := p.reported(t, "parametersError"); got != "<nil>" {
			return fmt.Errorf("parametersError %q", got)
		}
		return nil
	})
	if got := variable("sql_mode"); got != "STRICT_ALL_TABLES,NO_ZERO_DATE" {
		t.Errorf("sql_mode: %s", got)
	}
	if got := variable("max_allowed_packet"); got != "16777216" {
		t.Errorf("max_allowed_packet dropped from the set: %s, want the default 16777216", got)
	}
	if got := fmt.Sprint(p.status(t)["pendingRestart"]); got != "[back_log event_scheduler]" {
		t.Errorf("pendingRestart %s, want [back_log event_scheduler]", got)
	}
	p.stop(t)
	p = start(t, my, path, args...)
	if got := variable("back_log"); got != "100" {
		t.Errorf("back_log after the restart: %s, want 100", got)
	}
	if got := variable("event_scheduler"); got != "DISABLED" {
		t.Errorf("event_scheduler after the restart: %s, want DISABLED", got)
	}
	if got := p.reported(t, "pendingRestart"); got != "<nil>" {
		t.Errorf("pendingRestart after the restart: %s", got)
	}
	p.stop(t)
}

// reported is a field of the program's /status as printed, "<nil>" when
// absent.
func (p *program) reported(t testing.TB, key string) string {
	t.Helper()
	return fmt.Sprint(p.status(t)[key])
}

// awaitRefusal waits until the program's /status says it refuses the
// parameters with a message holding want.
func (p *program) awaitRefusal(t testing.TB, what, want string) {
	t.Helper()
	eventually(t, 30*time.Second, what, func() error {
		if got := p.reported(t, "parametersError"); !strings.Contains(got, want) {
			return fmt.Errorf("parametersError %q", got)
		}
		return nil
	})
}

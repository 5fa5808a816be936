package instance_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestPostgresReplicaClonesAndStreams starts a primary and a replica through
// the instance program: the replica clones the primary with pg_basebackup
// into its own slot, turns ready only once it streams, refuses writes, and
// has 10,000 rows written on the primary with the same checksum.
func TestPostgresReplicaClonesAndStreams(t *testing.T) {
	pg := lookup(t, "postgres")
	ctx := context.Background()
	path := "/usr/lib/postgresql/15/bin:/usr/bin:/bin"
	ports := map[string]int{}
	var args = map[string][]string{}
	for _, name := range []string{"db-0", "db-1"} {
		dir := pg.workDir(t)
		creds := pg.mkdir(t, filepath.Join(dir, "credentials"))
		sockets := pg.mkdir(t, filepath.Join(dir, "run"))
		credentials(t, pg, creds, "shop", "app-pass", "super-pass")
		pg.writeFile(t, filepath.Join(dir, "replication-password"), "repl-pass")
		port := freePort(t)
		ports[name] = port
		pg.writeFile(t, filepath.Join(dir, "postgresql.conf"), fmt.Sprintf(
			"listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nshared_buffers = 32MB\nhot_standby = on\n", port, sockets))
		args[name] = []string{"--engine=postgres", "--data-dir=" + filepath.Join(dir, "pgdata"),
			"--config-file=" + filepath.Join(dir, "postgresql.conf"), "--socket=" + sockets,
			"--port=" + strconv.Itoa(port), "--credentials-dir=" + creds,
			"--instance-name=" + name, "--replication-password-file=" + filepath.Join(dir, "replication-password")}
	}
	primary := start(t, pg, path, args["db-0"]...)
	began := time.Now()
	replica := start(t, pg, path, append(args["db-1"], "--clone-from=127.0.0.1", "--clone-port="+strconv.Itoa(ports["db-0"]))...)
	t.Logf("replica cloned and streaming in %.1fs", time.Since(began).Seconds())

	app, err := pgConnect(ctx, ports["db-0"], "shop", "app-pass", "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	if _, err := app.Exec(ctx, "CREATE TABLE orders AS SELECT g AS id, md5(g::text) AS note FROM generate_series(1, 10000) g"); err != nil {
		t.Fatal(err)
	}
	const checksum = "SELECT count(*)::text || ':' || md5(string_agg(id::text || note, ',' ORDER BY id)) FROM orders"
	var want string
	if err := app.QueryRow(ctx, checksum).Scan(&want); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the replica has the primary's rows", func() error {
		conn, err := pgConnect(ctx, ports["db-1"], "shop", "app-pass", "shop")
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		var got string
		if err := conn.QueryRow(ctx, checksum).Scan(&got); err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("replica %s, primary %s", got, want)
		}
		return nil
	})
	conn, err := pgConnect(ctx, ports["db-1"], "shop", "app-pass", "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO orders VALUES (0, 'x')"); err == nil {
		t.Error("the replica accepts writes")
	}
	conn.Close(ctx)

	admin, err := pgConnect(ctx, ports["db-0"], "postgres", "super-pass", "postgres")
	if err != nil {
		t.Fatal(err)
	}
	var slot string
	if err := admin.QueryRow(ctx, "SELECT slot_name FROM pg_replication_slots WHERE active").Scan(&slot); err != nil || slot != "db_1" {
		t.Errorf("the replica does not stream through its own slot db_1: %q %v", slot, err)
	}
	admin.Close(ctx)
	replica.stop(t)
	primary.stop(t)
}

package instance_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/instance/layout"
)

// BenchmarkPostgresBackup prints what `make bench-backup` reports for
// PostgreSQL: base backup and restore throughput (MB of data per second)
// into and out of a real S3 server on this machine, and the time from a
// commit to its WAL segment being in the store, with the archive_timeout
// pods run with.
func BenchmarkPostgresBackup(b *testing.B) {
	pg := lookup(b, "postgres")
	ctx := context.Background()
	path := "/usr/lib/postgresql/15/bin:/usr/bin:/bin"
	target, _ := s3Target(b, pg, "bench")
	node := func(name string, env string, extra ...string) (int, *program) {
		dir := pg.workDir(b)
		creds := pg.mkdir(b, filepath.Join(dir, "credentials"))
		sockets := pg.mkdir(b, filepath.Join(dir, "run"))
		credentials(b, pg, creds, "shop", "app-pass", "super-pass")
		pg.writeFile(b, filepath.Join(dir, "replication-password"), "repl-pass")
		port := freePort(b)
		pg.writeFile(b, filepath.Join(dir, "postgresql.conf"), fmt.Sprintf(
			"listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nshared_buffers = 128MB\nmax_wal_size = 1GB\n", port, sockets))
		args := append([]string{"--engine=postgres", "--data-dir=" + filepath.Join(dir, "pgdata"),
			"--config-file=" + filepath.Join(dir, "postgresql.conf"), "--socket=" + sockets,
			"--port=" + strconv.Itoa(port), "--credentials-dir=" + creds, "--instance-name=" + name,
			"--replication-password-file=" + filepath.Join(dir, "replication-password"), "--bootstrap=primary"}, extra...)
		return port, startWithEnv(b, pg, path, []string{env}, args...)
	}
	port, primary := node("bench-0", envJSON(b, layout.BackupTargetEnv, target))
	app, err := pgConnect(ctx, port, "shop", "app-pass", "shop")
	if err != nil {
		b.Fatal(err)
	}
	defer app.Close(ctx)
	if _, err := app.Exec(ctx, "CREATE TABLE items AS SELECT g AS id, md5(g::text) || md5((g+1)::text) AS payload FROM generate_series(1, 3000000) g"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		started := time.Now()
		m := primary.backUp(b, "repl-pass", fmt.Sprintf("bench-%d", i))
		backupSeconds := time.Since(started).Seconds()
		mb := float64(m.Files[0].Size) / 1e6

		restoreStarted := time.Now()
		restoredPort, _ := node(fmt.Sprintf("restored-%d", i), envJSON(b, layout.RestoreSourceEnv, layout.RestoreSource{Target: target, Backup: m.Name}))
		restoreSeconds := time.Since(restoreStarted).Seconds()
		restored, err := pgConnect(ctx, restoredPort, "shop", "app-pass", "shop")
		if err != nil {
			b.Fatal(err)
		}
		var rows int
		err = restored.QueryRow(ctx, "SELECT count(*) FROM items").Scan(&rows)
		restored.Close(ctx)
		if err != nil || rows != 3000000 {
			b.Fatalf("restored %d rows (%v), want 3000000", rows, err)
		}

		var segment string
		committed := time.Now()
		if err := app.QueryRow(ctx, "INSERT INTO items VALUES (0, 'x') RETURNING pg_walfile_name(pg_current_wal_lsn())").Scan(&segment); err != nil {
			b.Fatal(err)
		}
		eventually(b, 3*time.Minute, "the committed segment archived", func() error {
			archive, _ := primary.status(b)["archive"].(map[string]any)
			last, _ := archive["lastArchived"].(string)
			at, _ := archive["lastArchivedTime"].(string)
			archived, err := time.Parse(time.RFC3339Nano, at)
			if len(last) < 24 || last[:24] < segment || err != nil || !archived.After(committed) {
				return fmt.Errorf("archived %q at %q, want %s after the commit", last, at, segment)
			}
			return nil
		})
		commitToArchive := time.Since(committed).Seconds()
		if _, err := app.Exec(ctx, "DELETE FROM items WHERE id = 0"); err != nil {
			b.Fatal(err)
		}
		if code := primary.request(b, http.MethodDelete, layout.BackupsPath+"/"+m.Name, "repl-pass", nil); code != http.StatusNoContent {
			b.Fatalf("deleting the backup: %d", code)
		}
		b.ReportMetric(mb/backupSeconds, "backup_MB/s")
		b.ReportMetric(mb/restoreSeconds, "restore_MB/s")
		b.ReportMetric(commitToArchive, "commit_to_archive_s")
		fmt.Printf("backup postgres data_mb=%.0f stored_mb=%.0f backup_mb_s=%.1f restore_mb_s=%.1f commit_to_archive_s=%.1f (archive_timeout %s)\n",
			mb, float64(m.Files[0].StoredSize)/1e6, mb/backupSeconds, mb/restoreSeconds, commitToArchive, "60s")
	}
}

// BenchmarkMariaDBBackup prints MariaDB's base backup and restore
// throughput (MB of data per second) into and out of a real S3 server.
// Binary logs are not archived yet, so there is no commit-to-store time.
func BenchmarkMariaDBBackup(b *testing.B) {
	my := lookup(b, "mysql")
	ctx := context.Background()
	path := "/usr/sbin:/usr/bin:/bin"
	target, _ := s3Target(b, my, "bench")
	node := func(name string, env string) (int, *program) {
		dir := my.workDir(b)
		creds := my.mkdir(b, filepath.Join(dir, "credentials"))
		run := my.mkdir(b, filepath.Join(dir, "run"))
		credentials(b, my, creds, "shop", "app-pass", "super-pass")
		my.writeFile(b, filepath.Join(dir, "replication-password"), "repl-pass")
		port := freePort(b)
		my.writeFile(b, filepath.Join(dir, "my.cnf"), fmt.Sprintf(
			"[mysqld]\nbind-address = 127.0.0.1\nport = %d\nskip-name-resolve\ninnodb_buffer_pool_size = 256M\nlog-bin = binlog\n", port))
		return port, startWithEnv(b, my, path, []string{env}, "--engine=mariadb", "--data-dir="+filepath.Join(dir, "data"),
			"--socket="+filepath.Join(run, "mysqld.sock"), "--defaults-file="+filepath.Join(dir, "my.cnf"),
			"--credentials-dir="+creds, "--instance-name="+name,
			"--replication-password-file="+filepath.Join(dir, "replication-password"), "--bootstrap=primary")
	}
	port, primary := node("bench-0", envJSON(b, layout.BackupTargetEnv, target))
	app, err := mysqlConnect(ctx, port, "shop", "app-pass", "shop")
	if err != nil {
		b.Fatal(err)
	}
	defer app.Close()
	for _, stmt := range []string{
		"CREATE TABLE items (id INT PRIMARY KEY, payload VARCHAR(64) NOT NULL)",
		"INSERT INTO items SELECT seq, CONCAT(md5(seq), md5(seq + 1)) FROM seq_1_to_3000000",
	} {
		if _, err := app.ExecContext(ctx, stmt); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		started := time.Now()
		m := primary.backUp(b, "repl-pass", fmt.Sprintf("bench-%d", i))
		backupSeconds := time.Since(started).Seconds()
		mb := float64(m.Files[0].Size) / 1e6
		restoreStarted := time.Now()
		restoredPort, _ := node(fmt.Sprintf("restored-%d", i), envJSON(b, layout.RestoreSourceEnv, layout.RestoreSource{Target: target, Backup: m.Name}))
		restoreSeconds := time.Since(restoreStarted).Seconds()
		restored, err := mysqlConnect(ctx, restoredPort, "shop", "app-pass", "shop")
		if err != nil {
			b.Fatal(err)
		}
		var rows int
		err = restored.QueryRowContext(ctx, "SELECT COUNT(*) FROM items").Scan(&rows)
		restored.Close()
		if err != nil || rows != 3000000 {
			b.Fatalf("restored %d rows (%v), want 3000000", rows, err)
		}
		committed := time.Now()
		if _, err := app.ExecContext(ctx, "INSERT INTO items VALUES (0, 'x')"); err != nil {
			b.Fatal(err)
		}
		eventually(b, 3*time.Minute, "the committed binary log archived", func() error {
			archive, _ := primary.status(b)["archive"].(map[string]any)
			at, _ := archive["lastArchivedTime"].(string)
			if archived, err := time.Parse(time.RFC3339Nano, at); err != nil || !archived.After(committed) {
				return fmt.Errorf("archived at %q", at)
			}
			return nil
		})
		commitToArchive := time.Since(committed).Seconds()
		if _, err := app.ExecContext(ctx, "DELETE FROM items WHERE id = 0"); err != nil {
			b.Fatal(err)
		}
		if code := primary.request(b, http.MethodDelete, layout.BackupsPath+"/"+m.Name, "repl-pass", nil); code != http.StatusNoContent {
			b.Fatalf("deleting the backup: %d", code)
		}
		b.ReportMetric(mb/backupSeconds, "backup_MB/s")
		b.ReportMetric(mb/restoreSeconds, "restore_MB/s")
		b.ReportMetric(commitToArchive, "commit_to_archive_s")
		fmt.Printf("backup mariadb data_mb=%.0f stored_mb=%.0f backup_mb_s=%.1f restore_mb_s=%.1f commit_to_archive_s=%.1f (binary logs rotated after 60s)\n",
			mb, float64(m.Files[0].StoredSize)/1e6, mb/backupSeconds, mb/restoreSeconds, commitToArchive)
	}
}

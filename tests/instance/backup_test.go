package instance_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/localcluster"
	"github.com/dbpilot/dbpilot/internal/s3server"
)

// s3Target starts a real S3 server (versitygw) with a bucket and returns
// the backup target pods would get, its credentials written as the Secret's
// files for u, and the server.
func s3Target(t testing.TB, u osUser, prefix string) (layout.BackupTarget, *s3server.Server) {
	t.Helper()
	binDir, err := localcluster.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	server, err := s3server.Start(context.Background(), s3server.Config{Binary: filepath.Join(binDir, "versitygw")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Stop)
	if err := server.CreateBucket(context.Background(), "backups"); err != nil {
		t.Fatal(err)
	}
	creds := u.mkdir(t, filepath.Join(u.workDir(t), "s3-credentials"))
	u.writeFile(t, filepath.Join(creds, layout.KeyAccessKeyID), server.AccessKey)
	u.writeFile(t, filepath.Join(creds, layout.KeySecretAccessKey), server.SecretKey)
	return layout.BackupTarget{S3: &layout.S3Target{Endpoint: server.Endpoint, Bucket: "backups", Prefix: prefix, CredentialsDir: creds}}, server
}

func envJSON(t testing.TB, name string, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return name + "=" + string(data)
}

// request sends an operator request with the token and decodes a JSON
// answer into out (when not nil).
func (p *program) request(t testing.TB, method, path, token string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, strings.Replace(p.probe, "/readyz", path, 1), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("%s %s answered %d %q: %v", method, path, resp.StatusCode, body, err)
		}
	}
	return resp.StatusCode
}

// backUp asks the instance for a base backup and waits for it to complete.
func (p *program) backUp(t testing.TB, token, name string) layout.BackupManifest {
	t.Helper()
	if code, answer := p.post(t, layout.BackupsPath, token, layout.BackupRequest{Name: name}); code != http.StatusAccepted {
		t.Fatalf("starting backup %s: %d %s", name, code, answer)
	}
	var job layout.BackupJob
	eventually(t, 5*time.Minute, "backup "+name+" completes", func() error {
		if code := p.request(t, http.MethodGet, layout.BackupsPath+"/"+name, token, &job); code != http.StatusOK {
			return fmt.Errorf("GET answered %d", code)
		}
		if job.Phase != layout.BackupCompleted {
			return fmt.Errorf("phase %s %s", job.Phase, job.Error)
		}
		return nil
	})
	if job.Phase != layout.BackupCompleted {
		t.Fatalf("backup %s: %s: %s", name, job.Phase, job.Error)
	}
	return *job.Manifest
}

// tableDigest is the row count and a checksum of every row of t.
func tableDigest(ctx context.Context, conn *pgx.Conn, table string) (string, error) {
	var count int
	var sum string
	err := conn.QueryRow(ctx, "SELECT count(*), coalesce(md5(string_agg(id::text || ':' || payload, ',' ORDER BY id)), '') FROM "+table).Scan(&count, &sum)
	return fmt.Sprintf("%d rows, md5 %s", count, sum), err
}

// TestPostgresBackupAndPointInTimeRestore writes 100,000 rows, takes a base
// backup from a streaming replica into a real S3 server while the primary
// archives its WAL there, writes two more batches with an instant noted
// between them, and restores into new instances: to that instant (the rows
// and their checksum equal the data then), and to the end of the archive.
// A corrupted base backup is refused by its checksum, leaving the data
// directory empty; deleting a backup prunes the WAL no remaining backup
// needs. A restore to a time the archive does not reach, or of another
// major version, fails saying so.
func TestPostgresBackupAndPointInTimeRestore(t *testing.T) {
	pg := lookup(t, "postgres")
	ctx := context.Background()
	path := "/usr/lib/postgresql/15/bin:/usr/bin:/bin"
	target, server := s3Target(t, pg, "shop/orders")
	targetEnv := envJSON(t, layout.BackupTargetEnv, target)

	type node struct {
		port int
		args []string
	}
	newNode := func(name string) node {
		dir := pg.workDir(t)
		creds := pg.mkdir(t, filepath.Join(dir, "credentials"))
		sockets := pg.mkdir(t, filepath.Join(dir, "run"))
		credentials(t, pg, creds, "shop", "app-pass", "super-pass")
		pg.writeFile(t, filepath.Join(dir, "replication-password"), "repl-pass")
		port := freePort(t)
		pg.writeFile(t, filepath.Join(dir, "postgresql.conf"), fmt.Sprintf(
			"listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nshared_buffers = 32MB\nhot_standby = on\nwal_keep_size = 64MB\n", port, sockets))
		return node{port, []string{"--engine=postgres", "--data-dir=" + filepath.Join(dir, "pgdata"),
			"--config-file=" + filepath.Join(dir, "postgresql.conf"), "--socket=" + sockets,
			"--port=" + strconv.Itoa(port), "--credentials-dir=" + creds, "--instance-name=" + name,
			"--replication-password-file=" + filepath.Join(dir, "replication-password")}}
	}
	source, replicaNode := newNode("orders-0"), newNode("orders-1")
	primary := startWithEnv(t, pg, path, []string{targetEnv}, append(source.args, "--bootstrap=primary")...)
	app, err := pgConnect(ctx, source.port, "shop", "app-pass", "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	insert := func(from, to int) {
		t.Helper()
		if _, err := app.Exec(ctx, "INSERT INTO items SELECT g, md5(g::text) FROM generate_series($1::int, $2::int) g", from, to); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := app.Exec(ctx, "CREATE TABLE items (id int PRIMARY KEY, payload text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	insert(1, 100_000)
	replica := startWithEnv(t, pg, path, []string{targetEnv}, append(replicaNode.args, "--bootstrap=replica",
		"--clone-from=127.0.0.1", "--clone-port="+strconv.Itoa(source.port))...)

	// The base backup is taken from the replica.
	first := replica.backUp(t, "repl-pass", "first")
	if first.Instance != "orders-1" || first.Engine != "postgres" || !strings.HasPrefix(first.Version, "15") || first.SystemID == "" ||
		first.StartWAL == "" || len(first.Files) != 1 || first.Files[0].SHA256 == "" || first.Files[0].StoredSize >= first.Files[0].Size {
		t.Fatalf("manifest of a replica's backup: %+v", first)
	}
	t.Logf("base backup: %d bytes (%d stored), %s → %s", first.Files[0].Size, first.Files[0].StoredSize, first.StartPosition, first.EndPosition)

	insert(100_001, 110_000)
	var instant time.Time
	if err := app.QueryRow(ctx, "SELECT pg_sleep(1), clock_timestamp()").Scan(nil, &instant); err != nil {
		t.Fatal(err)
	}
	atInstant, err := tableDigest(ctx, app, "items")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	insert(110_001, 120_000)
	atEnd, err := tableDigest(ctx, app, "items")
	if err != nil {
		t.Fatal(err)
	}
	// Everything written is archived: the current segment is switched out
	// and PostgreSQL reports it archived.
	var segment string
	if err := app.QueryRow(ctx, "SELECT pg_walfile_name(pg_current_wal_lsn())").Scan(&segment); err != nil {
		t.Fatal(err)
	}
	admin, err := pgConnect(ctx, source.port, "postgres", "super-pass", "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "SELECT pg_switch_wal()"); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "segment "+segment+" archived", func() error {
		status := primary.status(t)
		archive, _ := status["archive"].(map[string]any)
		if last, _ := archive["lastArchived"].(string); last < segment {
			return fmt.Errorf("archive status %v", archive)
		}
		return nil
	})

	restore := func(name string, src layout.RestoreSource) (node, *program) {
		n := newNode(name)
		p := startWithEnv(t, pg, path, []string{envJSON(t, layout.RestoreSourceEnv, src)}, append(n.args, "--bootstrap=primary")...)
		return n, p
	}
	digestOf := func(n node) string {
		t.Helper()
		var digest string
		eventually(t, 2*time.Minute, "the restored instance is a primary with the rows", func() error {
			conn, err := pgConnect(ctx, n.port, "shop", "app-pass", "shop")
			if err != nil {
				return err
			}
			defer conn.Close(ctx)
			var recovering bool
			if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering); err != nil || recovering {
				return fmt.Errorf("still recovering (%v)", err)
			}
			digest, err = tableDigest(ctx, conn, "items")
			return err
		})
		return digest
	}
	pitr, _ := restore("pitr-0", layout.RestoreSource{Target: target, Backup: "first", TargetTime: &instant})
	if got := digestOf(pitr); got != atInstant {
		t.Fatalf("restored to %s: %s, want %s", instant.Format(time.RFC3339Nano), got, atInstant)
	}
	full, _ := restore("full-0", layout.RestoreSource{Target: target, Backup: "first"})
	if got := digestOf(full); got != atEnd {
		t.Fatalf("restored to the end of the archive: %s, want %s", got, atEnd)
	}
	t.Logf("restored: %s at %s, %s at the end", atInstant, instant.Format(time.RFC3339Nano), atEnd)

	// A restore that cannot finish says why: a target time the archive
	// does not reach, a backup of another major version.
	refused := func(name string, src layout.RestoreSource, want string) {
		t.Helper()
		n := newNode(name)
		p := launchWithEnv(t, pg, path, []string{envJSON(t, layout.RestoreSourceEnv, src)}, append(n.args, "--bootstrap=primary")...)
		if err := p.waitExit(t, 2*time.Minute); err == nil || !strings.Contains(p.printed(), want) {
			t.Fatalf("restore %s: %v, want %q in:\n%s", name, err, want, p.printed())
		}
	}
	later := time.Now().Add(time.Hour)
	refused("beyond-0", layout.RestoreSource{Target: target, Backup: "first", TargetTime: &later}, "stopped while recovering from the archive")
	manifestPath := filepath.Join(server.Dir, "backups", "shop", "orders", "base", "first", "manifest.json")
	manifest, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifestPath, []byte(strings.Replace(string(manifest), `"version": "15.`, `"version": "14.`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	refused("older-0", layout.RestoreSource{Target: target, Backup: "first"}, "restores only into its major version")
	if err := os.WriteFile(manifestPath, manifest, 0o644); err != nil {
		t.Fatal(err)
	}

	// A second backup, from the primary; deleting the first prunes the WAL
	// from before the second's start.
	second := primary.backUp(t, "repl-pass", "second")
	walDir := filepath.Join(server.Dir, "backups", "shop", "orders", "wal")
	countBefore := func(startWAL string) int {
		entries, _ := os.ReadDir(walDir)
		n := 0
		for _, e := range entries {
			if name := strings.TrimSuffix(e.Name(), ".gz"); len(name) == 24 && name[8:] < startWAL[8:] {
				n++
			}
		}
		return n
	}
	if countBefore(second.StartWAL) == 0 {
		t.Fatalf("no WAL archived before the second backup's start %s", second.StartWAL)
	}
	if code := primary.request(t, http.MethodDelete, layout.BackupsPath+"/first", "repl-pass", nil); code != http.StatusNoContent {
		t.Fatalf("DELETE first: %d", code)
	}
	if n := countBefore(second.StartWAL); n != 0 {
		t.Fatalf("%d WAL segments older than the remaining backup's start %s were kept", n, second.StartWAL)
	}
	if code := primary.request(t, http.MethodGet, layout.BackupsPath+"/first", "repl-pass", nil); code != http.StatusNotFound {
		t.Fatalf("GET of the deleted backup: %d, want 404", code)
	}

	// A corrupted artifact is refused by its checksum.
	artifact := filepath.Join(server.Dir, "backups", "shop", "orders", "base", "second", "base.tar.gz")
	data, err := os.ReadFile(artifact)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(artifact, data, 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := newNode("corrupt-0")
	p := launchWithEnv(t, pg, path, []string{envJSON(t, layout.RestoreSourceEnv, layout.RestoreSource{Target: target, Backup: "second"})},
		append(corrupt.args, "--bootstrap=primary")...)
	if err := p.waitExit(t, 2*time.Minute); err == nil || !strings.Contains(p.printed(), "checksum mismatch") {
		t.Fatalf("restoring a corrupted backup: %v, want a checksum mismatch:\n%s", err, p.printed())
	}
	dataDir := argValue(t, corrupt.args, "--data-dir")
	if entries, err := os.ReadDir(dataDir); err != nil && !errors.Is(err, os.ErrNotExist) || len(entries) != 0 {
		t.Fatalf("a failed restore left %d entries in the data directory (%v)", len(entries), err)
	}
}

// TestMariaDBBackupAndPointInTimeRestore writes 100,000 rows into a
// MariaDB primary that archives its binary logs (rotated every 2 s here)
// into a real S3 server, takes a base backup from its replica, writes two
// more batches with an instant noted between them, and restores into new
// instances: to that instant (the rows and their checksum equal the data
// then) and to the end of the archive; each is a writable primary of its
// own. Deleting a backup prunes the binary logs the remaining one holds; a
// corrupted backup is refused by its checksum.
func TestMariaDBBackupAndPointInTimeRestore(t *testing.T) {
	my := lookup(t, "mysql")
	ctx := context.Background()
	path := "/usr/sbin:/usr/bin:/bin"
	target, server := s3Target(t, my, "shop/catalog")
	targetEnv := envJSON(t, layout.BackupTargetEnv, target)
	type node struct {
		port int
		args []string
	}
	newNode := func(name string) node {
		dir := my.workDir(t)
		creds := my.mkdir(t, filepath.Join(dir, "credentials"))
		run := my.mkdir(t, filepath.Join(dir, "run"))
		credentials(t, my, creds, "shop", "app-pass", "super-pass")
		my.writeFile(t, filepath.Join(dir, "replication-password"), "repl-pass")
		port := freePort(t)
		my.writeFile(t, filepath.Join(dir, "my.cnf"), fmt.Sprintf(
			"[mysqld]\nbind-address = 127.0.0.1\nport = %d\nskip-name-resolve\ninnodb_buffer_pool_size = 64M\nlog-bin = binlog\nlog-slave-updates = ON\n", port))
		return node{port, []string{"--engine=mariadb", "--data-dir=" + filepath.Join(dir, "data"),
			"--socket=" + filepath.Join(run, "mysqld.sock"), "--defaults-file=" + filepath.Join(dir, "my.cnf"),
			"--credentials-dir=" + creds, "--instance-name=" + name, "--archive-timeout=2s",
			"--replication-password-file=" + filepath.Join(dir, "replication-password")}}
	}
	source, replicaNode := newNode("catalog-0"), newNode("catalog-1")
	primary := startWithEnv(t, my, path, []string{targetEnv}, append(source.args, "--bootstrap=primary")...)
	app, err := mysqlConnect(ctx, source.port, "shop", "app-pass", "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	exec := func(stmt string) {
		t.Helper()
		if _, err := app.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	exec("CREATE TABLE items (id INT PRIMARY KEY, payload VARCHAR(40) NOT NULL)")
	exec("INSERT INTO items SELECT seq, md5(seq) FROM seq_1_to_100000")
	// A binary log archived, and a transaction after it, before the backup:
	// the restore must not replay a log that ends before its position.
	eventually(t, time.Minute, "a binary log archived", func() error {
		if archive, _ := primary.status(t)["archive"].(map[string]any); archive["lastArchived"] == nil {
			return fmt.Errorf("archive status %v", archive)
		}
		return nil
	})
	exec("CREATE TABLE marker (id INT PRIMARY KEY)")
	digest := func(port int) (string, error) {
		db, err := mysqlConnect(ctx, port, "shop", "app-pass", "shop")
		if err != nil {
			return "", err
		}
		defer db.Close()
		var d string
		err = db.QueryRowContext(ctx, "SELECT CONCAT(COUNT(*), ':', MD5(SUM(CRC32(CONCAT(id, ':', payload))))) FROM items").Scan(&d)
		return d, err
	}
	atBackup, err := digest(source.port)
	if err != nil {
		t.Fatal(err)
	}
	instancePort := strings.TrimSuffix(strings.TrimPrefix(primary.probe, "http://127.0.0.1:"), "/readyz")
	replica := startWithEnv(t, my, path, []string{targetEnv}, append(replicaNode.args, "--bootstrap=replica", "--clone-from=127.0.0.1",
		"--clone-port="+strconv.Itoa(source.port), "--clone-instance-port="+instancePort)...)
	eventually(t, time.Minute, "the replica has the rows", func() error {
		d, err := digest(replicaNode.port)
		if err == nil && d != atBackup {
			err = fmt.Errorf("replica has %s", d)
		}
		return err
	})
	m := replica.backUp(t, "repl-pass", "first")
	if m.Engine != "mariadb" || !strings.HasPrefix(m.Version, "10.11") || m.Instance != "catalog-1" || m.StartPosition == "" ||
		len(m.Files) != 1 || m.Files[0].StoredSize >= m.Files[0].Size {
		t.Fatalf("manifest of a replica's backup: %+v", m)
	}
	t.Logf("base backup: %d bytes (%d stored) at GTID %s", m.Files[0].Size, m.Files[0].StoredSize, m.StartPosition)

	exec("INSERT INTO items SELECT seq, md5(seq) FROM seq_100001_to_110000")
	time.Sleep(1500 * time.Millisecond)
	instant := time.Now()
	atInstant, err := digest(source.port)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	exec("INSERT INTO items SELECT seq, md5(seq) FROM seq_110001_to_120000")
	atEnd, err := digest(source.port)
	if err != nil {
		t.Fatal(err)
	}
	var current string
	if err := app.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&current); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the binary log of the last batch archived", func() error {
		archive, _ := primary.status(t)["archive"].(map[string]any)
		at, _ := archive["lastArchivedTime"].(string)
		archived, err := time.Parse(time.RFC3339Nano, at)
		if err != nil || !archived.After(instant.Add(2*time.Second)) {
			return fmt.Errorf("archive status %v", archive)
		}
		return nil
	})

	restore := func(name string, src layout.RestoreSource) int {
		n := newNode(name)
		startWithEnv(t, my, path, []string{envJSON(t, layout.RestoreSourceEnv, src)}, append(n.args, "--bootstrap=primary")...)
		return n.port
	}
	pitr := restore("pitr-0", layout.RestoreSource{Target: target, Backup: "first", TargetTime: &instant})
	if got, err := digest(pitr); err != nil || got != atInstant {
		t.Fatalf("restored to %s: %s (%v), want %s", instant.Format(time.RFC3339Nano), got, err, atInstant)
	}
	full := restore("full-0", layout.RestoreSource{Target: target, Backup: "first"})
	if got, err := digest(full); err != nil || got != atEnd {
		t.Fatalf("restored to the end of the archive: %s (%v), want %s", got, err, atEnd)
	}
	t.Logf("restored: %s at %s, %s at the end (GTID %s)", atInstant, instant.Format(time.RFC3339Nano), atEnd, current)
	restored, err := mysqlConnect(ctx, full, "shop", "app-pass", "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	if _, err := restored.ExecContext(ctx, "INSERT INTO items VALUES (0, 'written after the restore')"); err != nil {
		t.Fatalf("the restored instance is not a writable primary: %v", err)
	}
	var replicating int
	if err := restored.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SLAVE_STATUS").Scan(&replicating); err == nil && replicating != 0 {
		t.Fatalf("the restored instance still replicates from the backup's source")
	}

	// A second backup; deleting the first prunes the binary logs archived
	// before the second started, which it holds.
	second := primary.backUp(t, "repl-pass", "second")
	binlogsBefore := func() int {
		entries, _ := os.ReadDir(filepath.Join(server.Dir, "backups", "shop", "catalog", "wal"))
		n := 0
		for _, e := range entries {
			info, err := e.Info()
			if err == nil && strings.HasSuffix(e.Name(), ".gz.json") && info.ModTime().Before(second.StartTime) {
				n++
			}
		}
		return n
	}
	if binlogsBefore() == 0 {
		t.Fatal("no binary log was archived before the second backup")
	}
	if code := primary.request(t, http.MethodDelete, layout.BackupsPath+"/first", "repl-pass", nil); code != http.StatusNoContent {
		t.Fatalf("DELETE first: %d", code)
	}
	if n := binlogsBefore(); n != 0 {
		t.Fatalf("%d binary logs archived before the remaining backup were kept", n)
	}
	if got, err := digest(restore("second-0", layout.RestoreSource{Target: target, Backup: "second"})); err != nil || got != atEnd {
		t.Fatalf("restoring the remaining backup: %s (%v), want %s", got, err, atEnd)
	}

	artifact := filepath.Join(server.Dir, "backups", "shop", "catalog", "base", "second", "base.mbstream.gz")
	data, err := os.ReadFile(artifact)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/3] ^= 0xff
	if err := os.WriteFile(artifact, data, 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := newNode("corrupt-0")
	p := launchWithEnv(t, my, path, []string{envJSON(t, layout.RestoreSourceEnv, layout.RestoreSource{Target: target, Backup: "second"})},
		append(corrupt.args, "--bootstrap=primary")...)
	if err := p.waitExit(t, 2*time.Minute); err == nil || !strings.Contains(p.printed(), "checksum mismatch") {
		t.Fatalf("restoring a corrupted backup: %v, want a checksum mismatch:\n%s", err, p.printed())
	}
	if entries, err := os.ReadDir(argValue(t, corrupt.args, "--data-dir")); err == nil && len(entries) != 0 {
		t.Fatalf("a failed restore left %d entries in the datadir", len(entries))
	}
}

package engines_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/mysql"
)

// TestMariaDBClonesASemiSyncPrimaryWithNoReplica is the state after a
// failover whose former primary must be cloned again: the new primary
// waits for a replica's acknowledgement of each commit, no replica is
// connected, and a commit waits. The backup a replica clones must still
// finish (mariadb-backup's commit lock waits for that commit), hold the
// commit, and leave the primary waiting for acknowledgements again.
func TestMariaDBClonesASemiSyncPrimaryWithNoReplica(t *testing.T) {
	mysqlUser := lookupUser(t, "mysql")
	dir := mysqlUser.tempDir(t)
	datadir := filepath.Join(dir, "data")
	db := database(dbpilotv1alpha1.EngineMariaDB, dbpilotv1alpha1.TierSmall)
	db.Spec.Replicas = ptr.To[int32](2)
	db.Spec.Replication = &dbpilotv1alpha1.ReplicationSpec{Synchronous: &dbpilotv1alpha1.SynchronousReplication{Count: 1}}
	config := writeConfig(t, dir, db)
	port, socket := startMariaDB(t, mysqlUser, dir, datadir, config, "--server-id=2")
	client := func(sql string) *exec.Cmd {
		return exec.Command("mariadb", "--no-defaults", "--protocol=tcp", "-h", "127.0.0.1", "-P", strconv.Itoa(port), "-uroot", "-N", "-B", "-e", sql)
	}
	query := func(sql string) string {
		t.Helper()
		out, err := output(client(sql))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	eventually(t, 60*time.Second, func() error { _, err := output(client("SELECT 1")); return err })
	query("CREATE DATABASE shop; CREATE TABLE shop.orders (id INT PRIMARY KEY) ENGINE=InnoDB; INSERT INTO shop.orders VALUES (1)")
	query("SET GLOBAL rpl_semi_sync_master_enabled = ON")

	// A commit waits for a replica's acknowledgement that cannot come.
	waiting := client("INSERT INTO shop.orders VALUES (2)")
	if err := waiting.Start(); err != nil {
		t.Fatal(err)
	}
	committed := make(chan error, 1)
	go func() { committed <- waiting.Wait() }()
	t.Cleanup(func() { _ = waiting.Process.Kill() })
	eventually(t, 30*time.Second, func() error {
		if n := query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE 'Waiting for semi-sync ACK%'"); n != "1" {
			return errors.New("no commit waits for an acknowledgement")
		}
		return nil
	})

	// The backup a new replica clones, from the primary's instance program.
	engine := &mysql.Engine{Flavor: mysql.MariaDB, DataDir: datadir, Socket: socket, DefaultsFile: config,
		Replication: mysql.Replication{Password: "replication-secret", SemiSync: true}}
	server := httptest.NewServer(engine.BackupHandler())
	defer server.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, server.URL+mysql.BackupPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer replication-secret")
	started := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	stream := filepath.Join(t.TempDir(), "backup.mbstream")
	file, err := os.Create(stream)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(file, resp.Body)
	file.Close()
	if err != nil {
		t.Fatalf("the backup for a replica never finished (after %s): %v", time.Since(started).Round(time.Second), err)
	}
	t.Logf("backup for a replica streamed in %s", time.Since(started).Round(time.Millisecond))

	select {
	case err := <-committed:
		if err != nil {
			t.Fatalf("the waiting commit failed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting commit was not acknowledged while the backup took its commit lock")
	}
	if got := query("SELECT @@GLOBAL.rpl_semi_sync_master_enabled"); got != "1" {
		t.Errorf("after the backup the primary no longer waits for acknowledgements: rpl_semi_sync_master_enabled = %s", got)
	}

	// The clone holds the commit: its position is the primary's.
	unpacked := t.TempDir()
	unpack := exec.Command("mbstream", "-x", "-C", unpacked)
	if unpack.Stdin, err = os.Open(stream); err != nil {
		t.Fatal(err)
	}
	if _, err := output(unpack); err != nil {
		t.Fatalf("mbstream: %v", err)
	}
	if _, err := output(exec.Command("mariadb-backup", "--prepare", "--target-dir="+unpacked)); err != nil {
		t.Fatalf("mariadb-backup --prepare: %v", err)
	}
	info, err := os.ReadFile(filepath.Join(unpacked, "mariadb_backup_binlog_info"))
	if err != nil {
		info, err = os.ReadFile(filepath.Join(unpacked, "xtrabackup_binlog_info"))
	}
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(info))
	if want := query("SELECT @@GLOBAL.gtid_binlog_pos"); len(fields) != 3 || fields[2] != want {
		t.Errorf("the clone ends at %q, the primary at GTID %s", info, want)
	}
}

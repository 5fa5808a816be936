package mysql

import (
	"reflect"
	"testing"
	"time"
)

func TestBackupLogGTID(t *testing.T) {
	log := "[00] 2026-11-23 00:51:52 Backup created in directory '/tmp/backup-1/'\n" +
		"[00] 2026-11-23 00:51:52 MySQL binlog position: filename 'binlog.000002', position '1234', GTID of the last change '0-1-10,1-2-7'\n" +
		"[00] 2026-11-23 00:51:52 completed OK!\n"
	if got := BackupLogGTID(log); got != "0-1-10,1-2-7" {
		t.Fatalf("GTID %q", got)
	}
	if got := BackupLogGTID("[00] completed OK!\n"); got != "" {
		t.Fatalf("a server that wrote nothing: GTID %q, want none", got)
	}
}

func TestReleaseSeries(t *testing.T) {
	for in, want := range map[string]string{
		"10.11.14-MariaDB-0+deb12u2":                                     "10.11",
		"mariadbd  Ver 10.11.14-MariaDB-0+deb12u2 for debian-linux-gnu":  "10.11",
		"mysqld  Ver 8.4.3 for Linux on x86_64 (MySQL Community Server)": "8.4",
		"11.4.2-MariaDB": "11.4",
		"unknown":        "",
	} {
		if got := releaseSeries(in); got != want {
			t.Errorf("releaseSeries(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReplayArgs(t *testing.T) {
	stop := time.Date(2026, 11, 23, 1, 2, 3, 900_000_000, time.FixedZone("CET", 3600))
	tests := []struct {
		flavor   Flavor
		position string
		stop     *time.Time
		want     []string
	}{
		{MariaDB, "0-1-10", &stop, []string{"--start-position=0-1-10", "--stop-datetime=2026-11-23 00:02:03", "f"}},
		{MariaDB, "", nil, []string{"f"}},
		{MySQL, "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-77", &stop,
			[]string{"--exclude-gtids=3E11FA47-71CA-11E1-9E33-C80AA9429562:1-77", "--stop-datetime=2026-11-23 00:02:03", "f"}},
	}
	for _, tt := range tests {
		if got := ReplayArgs(tt.flavor, "f", tt.position, tt.stop); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ReplayArgs(%s, %q) = %q, want %q", tt.flavor, tt.position, got, tt.want)
		}
	}
}

func TestMySQLBackupStatements(t *testing.T) {
	got := MySQLBackupStatements("/var/lib/it's/clone")
	if len(got) != 1 || got[0].SQL != `CLONE LOCAL DATA DIRECTORY = '/var/lib/it''s/clone'` {
		t.Fatalf("statements %+v", got)
	}
}

func TestArchivedName(t *testing.T) {
	if got := ArchivedName(2, "binlog.000003"); got != "2-binlog.000003" {
		t.Fatalf("archived name %q", got)
	}
}

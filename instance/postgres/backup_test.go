package postgres

import "testing"

func TestSegmentName(t *testing.T) {
	tests := []struct {
		timeline int
		lsn      string
		size     uint64
		want     string
	}{
		{1, "0/3000028", 16 << 20, "000000010000000000000003"},
		{2, "1/FF000000", 16 << 20, "0000000200000001000000FF"},
		{3, "A/2000", 64 << 20, "000000030000000A00000000"},
		{1, "0/4000000", 16 << 20, "000000010000000000000004"},
	}
	for _, tt := range tests {
		got, err := SegmentName(tt.timeline, tt.lsn, tt.size)
		if err != nil || got != tt.want {
			t.Errorf("SegmentName(%d, %s, %d) = %s, %v; want %s", tt.timeline, tt.lsn, tt.size, got, err, tt.want)
		}
	}
	if _, err := SegmentName(1, "not-an-lsn", 16<<20); err == nil {
		t.Error("a malformed position was accepted")
	}
}

func TestParseBaseBackupLog(t *testing.T) {
	log := "pg_basebackup: initiating base backup, waiting for checkpoint to complete\n" +
		"pg_basebackup: checkpoint completed\n" +
		"pg_basebackup: write-ahead log start point: 0/3000028 on timeline 2\n" +
		"pg_basebackup: write-ahead log end point: 0/4000100\n" +
		"pg_basebackup: base backup completed\n"
	start, end, err := ParseBaseBackupLog(log)
	if err != nil || start.lsn != "0/3000028" || start.timeline != 2 || end.lsn != "0/4000100" {
		t.Fatalf("parsed %+v → %+v, %v", start, end, err)
	}
	if _, _, err := ParseBaseBackupLog("pg_basebackup: error: connection failed\n"); err == nil {
		t.Fatal("a log without positions was accepted")
	}
}

func TestMajorVersion(t *testing.T) {
	for in, want := range map[string]string{
		"15.18":                           "15",
		"15.18 (Debian 15.18-0+deb12u1)":  "15",
		"postgres (PostgreSQL) 16.4\n":    "16",
		"postgres (PostgreSQL) 17beta1\n": "17",
		"":                                "",
	} {
		if got := majorVersion(in); got != want {
			t.Errorf("majorVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

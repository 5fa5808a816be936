package postgres

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// controlDataSample is pg_controldata 15's output for a standby (trimmed).
const controlDataSample = `pg_control version number:            1300
Database system identifier:           7311849245387264231
Database cluster state:               shut down in recovery
Latest checkpoint location:           0/3000060
Latest checkpoint's REDO location:    0/3000028
Latest checkpoint's TimeLineID:       1
Minimum recovery ending location:     0/5000110
Min recovery ending loc's timeline:   1
`

func TestParseControlData(t *testing.T) {
	c, err := parseControlData(controlDataSample)
	if err != nil {
		t.Fatal(err)
	}
	if c.systemID != "7311849245387264231" || c.timeline != 1 || formatLSN(c.position) != "0/5000110" {
		t.Errorf("control data %+v (position %s)", c, formatLSN(c.position))
	}
	if _, err := parseControlData("nothing useful"); err == nil {
		t.Error("output without an identifier accepted")
	}
}

func TestParseLSN(t *testing.T) {
	lsn, err := parseLSN("16/B374D848")
	if err != nil || lsn != 0x16B374D848 || formatLSN(lsn) != "16/B374D848" {
		t.Errorf("16/B374D848 -> %x %v", lsn, err)
	}
	for _, bad := range []string{"", "16", "x/1", "1/y"} {
		if _, err := parseLSN(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestDivergence: a replica follows a primary of its own timeline, or of a
// newer one whose history left the replica's timeline after the replica's
// data ends; otherwise it diverged.
func TestDivergence(t *testing.T) {
	history := "1\t0/5000200\tno recovery target specified\n2\t0/7000000\tno recovery target specified\n"
	replica := func(timeline int, lsn string) controlData {
		pos, err := parseLSN(lsn)
		if err != nil {
			t.Fatal(err)
		}
		return controlData{systemID: "1", timeline: timeline, position: pos}
	}
	for _, tc := range []struct {
		local           controlData
		primaryTimeline int
		history         string
		diverged        string // a word of the reason, "" when it follows
	}{
		{replica(1, "0/5000110"), 1, "", ""},
		{replica(2, "0/5000110"), 1, "", "ahead"},
		{replica(1, "0/5000110"), 3, history, ""},     // before the switch to 2
		{replica(1, "0/5000300"), 3, history, "past"}, // it went on after the switch
		{replica(2, "0/6000000"), 3, history, ""},
		{replica(4, "0/6000000"), 5, history, "does not contain"},
	} {
		got := divergence(tc.local, tc.primaryTimeline, tc.history)
		if (tc.diverged == "") != (got == "") || !strings.Contains(got, tc.diverged) {
			t.Errorf("replica on %d at %s, primary on %d: %q, want %q", tc.local.timeline, formatLSN(tc.local.position), tc.primaryTimeline, got, tc.diverged)
		}
	}
}

// TestReplicationConfigUsesTLSForThePrimary: the replica's own connections
// to its primary (the slot and history checks) use TLS for the primary's
// name, verified with the Database's authority; with the primary serving
// none, TLS first and then without.
func TestReplicationConfigUsesTLSForThePrimary(t *testing.T) {
	dir := t.TempDir()
	authority, err := pki.NewAuthority("test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r := Replication{CloneFrom: "orders-rw.shop.svc", Port: 5432, Password: "pw", TLS: instance.TLS{Dir: dir}}
	if err := os.WriteFile(r.TLS.CAFile(), authority.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := r.replicationConfig(sslVerifyFull)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != r.CloneFrom || cfg.Port != 5432 || cfg.User != ReplicationUser || cfg.Password != "pw" || cfg.RuntimeParams["replication"] != "true" {
		t.Errorf("config %s:%d user %s replication %q", cfg.Host, cfg.Port, cfg.User, cfg.RuntimeParams["replication"])
	}
	if cfg.TLSConfig == nil || cfg.TLSConfig.ServerName != r.CloneFrom || cfg.TLSConfig.RootCAs == nil || len(cfg.Fallbacks) != 0 {
		t.Errorf("verify-full: TLS %+v, %d fallbacks", cfg.TLSConfig, len(cfg.Fallbacks))
	}
	cfg, err = r.replicationConfig(sslPrefer)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLSConfig == nil || len(cfg.Fallbacks) != 1 || cfg.Fallbacks[0].TLSConfig != nil {
		t.Errorf("prefer: TLS %v, fallbacks %+v", cfg.TLSConfig != nil, cfg.Fallbacks)
	}
}

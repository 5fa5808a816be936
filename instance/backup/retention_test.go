package backup

import (
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/instance/layout"
)

func TestRetentionExpired(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	backups := func(agesInDays ...int) []layout.BackupManifest {
		var ms []layout.BackupManifest
		for _, age := range agesInDays {
			ms = append(ms, layout.BackupManifest{Name: time.Duration(age).String(), EndTime: now.Add(-time.Duration(age) * day)})
		}
		return ms
	}
	tests := []struct {
		name      string
		retention Retention
		ages      []int
		expired   int
	}{
		{"count keeps the newest", Retention{Count: 2}, []int{5, 4, 3, 2, 1}, 3},
		{"count not reached", Retention{Count: 7}, []int{3, 2, 1}, 0},
		{"age", Retention{MaxAge: 30 * day}, []int{40, 31, 29, 1}, 2},
		{"both: the stricter wins", Retention{Count: 3, MaxAge: 30 * day}, []int{40, 20, 10, 5, 1}, 2},
		{"the newest is kept even when too old", Retention{MaxAge: day}, []int{9, 8}, 1},
		{"no limits", Retention{}, []int{9, 8, 7}, 0},
		{"empty", Retention{Count: 1}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := backups(tt.ages...)
			got := tt.retention.Expired(ms, now)
			if len(got) != tt.expired {
				t.Fatalf("expired %d backups, want %d", len(got), tt.expired)
			}
			for i, m := range got {
				if m.Name != ms[i].Name {
					t.Fatalf("expired %v, want the oldest first", got)
				}
			}
		})
	}
}

func TestWALNotNeeded(t *testing.T) {
	start := "000000020000000100000005"
	tests := map[string]bool{
		"000000020000000100000004":                 true,
		"000000010000000100000004":                 true,
		"000000010000000000000FF0":                 true,
		"000000020000000100000005":                 false,
		"000000030000000100000006":                 false,
		"00000002.history":                         false,
		"000000010000000100000004.partial":         true,
		"000000020000000100000005.00000028.backup": false,
		"notawalfile":                              false,
	}
	for name, want := range tests {
		if got := WALNotNeeded(name, start); got != want {
			t.Errorf("WALNotNeeded(%q) = %v, want %v", name, got, want)
		}
	}
}

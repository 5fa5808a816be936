package backup

import (
	"time"

	"github.com/dbpilot/dbpilot/instance/layout"
)

// Retention is how many base backups are kept, and for how long.
type Retention struct {
	// Count keeps at most the newest Count backups; 0: no limit.
	Count int
	// MaxAge keeps backups that ended less than MaxAge ago; 0: no limit.
	MaxAge time.Duration
}

// Expired returns the backups retention removes, from manifests sorted
// oldest first: those beyond the newest Count, and those older than
// MaxAge. The newest backup is always kept, so a database that has had a
// backup always has one to restore.
func (r Retention) Expired(manifests []layout.BackupManifest, now time.Time) []layout.BackupManifest {
	var expired []layout.BackupManifest
	for i, m := range manifests {
		newerOnes := len(manifests) - 1 - i
		if newerOnes == 0 {
			break
		}
		tooMany := r.Count > 0 && newerOnes >= r.Count
		tooOld := r.MaxAge > 0 && now.Sub(m.EndTime) > r.MaxAge
		if tooMany || tooOld {
			expired = append(expired, m)
		}
	}
	return expired
}

// WALNotNeeded reports whether an archived PostgreSQL WAL file is older than
// the first segment the oldest kept backup needs (startWAL): no restore can
// use it. Timeline history files are always needed.
func WALNotNeeded(name, startWAL string) bool {
	const segmentName = 24
	if len(name) < segmentName || len(startWAL) != segmentName || !isHex(name[:segmentName]) {
		return false
	}
	// The timeline (the first 8 digits) does not matter: a segment from
	// before the backup's start is not needed on any timeline.
	return name[8:segmentName] < startWAL[8:]
}

func isHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}

package postgres

import (
	"fmt"
	"syscall"
)

// slotWALShare is the part of the data volume the replication slots may
// keep WAL in: a replica that is gone or far behind loses its slot (and
// re-clones) before the primary's disk fills.
const slotWALShare = 4

// keptWALShare is the part of the data volume kept as recent WAL whatever
// the slots need, up to keptWALMaxMiB: a former primary rewinds with
// pg_rewind from the last checkpoint before it diverged, and needs its own
// WAL from there.
const (
	keptWALShare  = 10
	keptWALMaxMiB = 1024
)

// walBoundArgs bound the WAL the slots keep to a quarter of the data
// directory's filesystem (max_slot_wal_keep_size), and keep a tenth of it
// (at most 1 GiB) of recent WAL (wal_keep_size); none when the size cannot
// be read.
func walBoundArgs(dataDir string) []string {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dataDir, &fs); err != nil || fs.Blocks == 0 {
		return nil
	}
	totalMiB := fs.Blocks * uint64(fs.Bsize) / (1 << 20)
	return []string{
		"-c", fmt.Sprintf("max_slot_wal_keep_size=%dMB", max(totalMiB/slotWALShare, 64)),
		"-c", fmt.Sprintf("wal_keep_size=%dMB", min(max(totalMiB/keptWALShare, 64), keptWALMaxMiB)),
	}
}

package postgres

import (
	"fmt"
	"syscall"
)

// slotWALShare is the part of the data volume the replication slots may
// keep WAL in: a replica that is gone or far behind loses its slot (and
// re-clones) before the primary's disk fills.
const slotWALShare = 4

// slotWALBoundArgs bound the WAL the slots keep to a quarter of the data
// directory's filesystem (max_slot_wal_keep_size); none when the size cannot
// be read.
func slotWALBoundArgs(dataDir string) []string {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dataDir, &fs); err != nil || fs.Blocks == 0 {
		return nil
	}
	mib := fs.Blocks * uint64(fs.Bsize) / slotWALShare / (1 << 20)
	return []string{"-c", fmt.Sprintf("max_slot_wal_keep_size=%dMB", max(mib, 64))}
}

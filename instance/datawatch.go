package instance

import (
	"context"
	"time"
)

// DataWatcher is an engine that notices, while it runs, that a replica's
// data can no longer follow its primary: its slot was lost while it fell
// behind, or its position is no longer in the primary's logs.
type DataWatcher interface {
	// Unusable says why the running replica's data cannot follow its
	// primary, or "" while it can (or it cannot tell yet).
	Unusable(ctx context.Context) string
	// Discard empties the stopped engine's data directory, so the next
	// start clones the primary again.
	Discard() error
}

// Mender is a DataWatcher that can also repair what needs no new clone: a
// MariaDB replica whose I/O thread stopped on an error other than a purged
// position (its primary's address briefly led to another server, say) is
// started again.
type Mender interface {
	Mend(ctx context.Context)
}

// dataCheckInterval is how often a running replica's data is checked.
const dataCheckInterval = 10 * time.Second

// watchData sends the first reason the watcher gives, then returns; it
// stops with ctx.
func watchData(ctx context.Context, watcher DataWatcher, unusable chan<- string) {
	ticker := time.NewTicker(dataCheckInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			check, cancel := context.WithTimeout(ctx, dataCheckInterval)
			why := watcher.Unusable(check)
			if mender, ok := watcher.(Mender); ok && why == "" {
				mender.Mend(check)
			}
			cancel()
			if why != "" {
				unusable <- why
				return
			}
		}
	}
}

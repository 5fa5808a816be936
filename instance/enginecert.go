package instance

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/dbpilot/dbpilot/internal/pki"
)

// While the engine presents another certificate than the mounted one (a
// reload it refused, or that came between the files of a change), it is
// asked again to load it, first reloadAgainAfter after it was last asked,
// then twice as long each time; and it is asked which certificate it
// serves at the first poll after each time it was asked to load one, then
// probeAgainAfter after, then twice as long each time. Both waits grow to
// at most backOffAtMost: a handshake that logs in as no one is a warning
// in MariaDB's log.
const (
	reloadAgainAfter = 10 * time.Second
	probeAgainAfter  = 2 * time.Second
	backOffAtMost    = 5 * time.Minute
)

// engineCertificate follows the mounted server certificate into the
// running engine, and knows which one it serves: the one it presented in
// a handshake, not the one it was asked to load (PostgreSQL reloads after
// it was asked, and keeps its former certificate when the new one does
// not load). An engine that cannot be asked (no CertificatePresenter) is
// taken to serve what it was asked to load.
type engineCertificate struct {
	// asked is the certificate file's content the engine was last asked
	// to load, as it started or by a reload; askedAt when, and askAgain
	// how long after it is asked again while it presents another.
	asked    FollowedFile
	askedAt  time.Time
	askAgain time.Duration
	// probeAt is when the engine is next asked which certificate it
	// presents, and probeAgain how long after that the next time.
	probeAt    time.Time
	probeAgain time.Duration
	// served is the content whose certificate the engine last presented,
	// nil when unknown.
	served *string
	// problem is the last problem logged, so that one that lasts is
	// logged once.
	problem string
}

// starting records the certificate the engine reads as it starts: before
// the start, so that one the kubelet replaces meanwhile is reloaded, and
// never reported served before it is.
func (c *engineCertificate) starting(engine Engine, now time.Time) {
	reloader, ok := engine.(TLSReloader)
	if !ok || !reloader.TLSFiles().Enabled() {
		return
	}
	if content, _, err := c.asked.Changed(reloader.TLSFiles().CertFile()); err == nil {
		c.askedToLoad(content, now)
		if _, presents := engine.(CertificatePresenter); !presents {
			c.served = &content
		}
	}
}

// askedToLoad records that the engine was asked to load content (a new
// certificate) at now.
func (c *engineCertificate) askedToLoad(content string, now time.Time) {
	c.asked.Applied(content)
	c.askedAt, c.askAgain = now, reloadAgainAfter
	c.probeAt, c.probeAgain = now, probeAgainAfter
}

// follow has the running engine reload its certificate when the mounted
// one changed since it was last asked to, and finds out which certificate
// it serves; it reports whether that changed (served). Problems are
// logged, once each while they last.
func (c *engineCertificate) follow(ctx context.Context, engine Engine, now time.Time, log *slog.Logger) bool {
	changed, err := c.followOnce(ctx, engine, now, log)
	switch {
	case err == nil:
		c.problem = ""
	case err.Error() != c.problem:
		c.problem = err.Error()
		log.Error("following the mounted server certificate; retrying", "error", c.problem)
	}
	return changed
}

func (c *engineCertificate) followOnce(ctx context.Context, engine Engine, now time.Time, log *slog.Logger) (bool, error) {
	reloader, ok := engine.(TLSReloader)
	if !ok || !reloader.TLSFiles().Enabled() {
		return false, nil
	}
	content, changed, err := c.asked.Changed(reloader.TLSFiles().CertFile())
	if err != nil {
		return false, err
	}
	presenter, presents := engine.(CertificatePresenter)
	if changed {
		// A reload the engine refuses (MariaDB's, of a certificate it
		// cannot load) is asked again as one it ignored, less and less
		// often.
		err := reloader.ReloadTLS(ctx)
		c.askedToLoad(content, now)
		if err != nil {
			return false, err
		}
		if !presents {
			c.served = &content
			return true, nil
		}
	}
	if !presents || c.asked.applied == nil || (c.served != nil && *c.served == *c.asked.applied) || now.Before(c.probeAt) {
		return false, nil
	}
	asked := *c.asked.applied
	c.probeAt, c.probeAgain = now.Add(c.probeAgain), min(2*c.probeAgain, backOffAtMost)
	presented, err := presenter.PresentedCertificate(ctx)
	if err != nil {
		return c.forget(), fmt.Errorf("asking the engine which certificate it serves: %w", err)
	}
	if bytes.Equal(presented, pki.LeafCertificate([]byte(asked))) {
		c.served = &asked
		log.Info("the engine serves the mounted server certificate")
		return true, nil
	}
	forgot := false
	if c.served == nil || !bytes.Equal(presented, pki.LeafCertificate([]byte(*c.served))) {
		forgot = c.forget()
	}
	if now.Sub(c.askedAt) < c.askAgain {
		return forgot, nil
	}
	log.Info("the engine still serves another certificate than the mounted one: asking it to load the mounted one again",
		"askedBefore", now.Sub(c.askedAt).Round(time.Second).String())
	askAgain := min(2*c.askAgain, backOffAtMost)
	c.askedToLoad(asked, now)
	c.askAgain = askAgain
	return forgot, reloader.ReloadTLS(ctx)
}

// forget makes the served certificate unknown, and reports whether it was
// known.
func (c *engineCertificate) forget() bool {
	known := c.served != nil
	c.served = nil
	return known
}

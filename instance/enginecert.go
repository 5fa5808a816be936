package instance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/dbpilot/dbpilot/internal/pki"
)

// While the engine presents another certificate than the mounted one (a
// reload it refused or has not got to yet, or one that came between the
// files of a change), or does not answer, it is asked which one it serves
// less and less often: at once, then probeAgainAfter after, twice as long
// each time after, and probeAgainAfter after each time it is asked again to
// load it. It is asked again to load the mounted one reloadAgainAfter after
// it was first asked, then twice as long each time. Both waits grow to at
// most backOffAtMost (a handshake that logs in as no one is a warning in
// MariaDB's log, and a refused certificate an error in every engine's).
const (
	probeAgainAfter  = 2 * time.Second
	reloadAgainAfter = 10 * time.Second
	backOffAtMost    = 5 * time.Minute
)

// engineCertificate follows the mounted server certificate into the
// running engine, and knows which one it serves: the one it presented in
// a handshake, not the one it was asked to load (PostgreSQL reloads after
// it was asked, and keeps its former certificate when the new one does not
// load). An engine that cannot be asked (no CertificatePresenter) is taken
// to serve what it was asked to load. Only the supervisor's loop uses it.
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
	// served is the content whose certificate the engine presented last
	// it was asked, nil when unknown (it presented another one, or did not
	// answer); seen is the last content it presented, which served goes
	// back to when it presents that again.
	served, seen *string
	// problem is the last problem logged, so that one that lasts is
	// logged once.
	problem string
	// clientAuthority is the client authority's file content the engine
	// read last; unset when it started verifying no client certificate
	// (without the file, or PostgreSQL not asked to), so that it reads
	// one only at its next start. A reload of it that failed is asked
	// again at clientAuthorityRetry, clientAuthorityBackOff after the last.
	clientAuthority        FollowedFile
	clientAuthorityRetry   time.Time
	clientAuthorityBackOff time.Duration
}

// starting records the certificate the engine reads as it starts: before
// the start, so that one the kubelet replaces meanwhile is reloaded, and
// never reported served before it is. And the client authority, when
// the engine's command (built before) has it verify client certificates
// with it.
func (c *engineCertificate) starting(engine Engine, now time.Time) {
	reloader, ok := engine.(TLSReloader)
	if !ok || !reloader.TLSFiles().Enabled() {
		return
	}
	if startsVerifyingClients(engine, reloader.TLSFiles()) {
		if content, _, err := c.clientAuthority.Changed(reloader.TLSFiles().ClientCAFile()); err == nil {
			c.clientAuthority.Applied(content)
		}
	}
	if content, _, err := c.asked.Changed(reloader.TLSFiles().CertFile()); err == nil {
		c.askedToLoad(content, now, reloadAgainAfter)
		if _, presents := engine.(CertificatePresenter); !presents {
			c.served = &content
		}
	}
}

// startsVerifyingClients says whether the engine starts verifying client
// certificates with the mounted client authority: as its command says
// (ClientVerifier), else when the file is there.
func startsVerifyingClients(engine Engine, files TLS) bool {
	if verifier, ok := engine.(ClientVerifier); ok {
		verifies, _ := verifier.VerifiesClients()
		return verifies
	}
	return files.VerifiesClients()
}

// askedToLoad records that the engine was asked to load content at now,
// to be asked again after askAgain; it is asked at once which certificate
// it serves.
func (c *engineCertificate) askedToLoad(content string, now time.Time, askAgain time.Duration) {
	c.asked.Applied(content)
	c.askedAt, c.askAgain = now, askAgain
	c.probeAt, c.probeAgain = now, probeAgainAfter
}

// follow has the running engine reload its certificate when the mounted
// one changed since it was last asked to, and finds out which certificate
// it serves; it reports whether that changed (served). Problems are
// logged, once each while they last.
func (c *engineCertificate) follow(ctx context.Context, engine Engine, now time.Time, log *slog.Logger) bool {
	before := c.served
	err := c.followOnce(ctx, engine, now, log)
	switch {
	case err == nil:
		c.problem = ""
	case err.Error() != c.problem:
		c.problem = err.Error()
		log.Error("following the mounted server certificate; retrying", "error", c.problem)
	}
	return before != c.served
}

func (c *engineCertificate) followOnce(ctx context.Context, engine Engine, now time.Time, log *slog.Logger) error {
	reloader, ok := engine.(TLSReloader)
	if !ok || !reloader.TLSFiles().Enabled() {
		return nil
	}
	// A client authority the engine does not take holds back no
	// certificate.
	return errors.Join(c.followClientAuthority(ctx, reloader, now, log), c.followServed(ctx, engine, reloader, now, log))
}

func (c *engineCertificate) followServed(ctx context.Context, engine Engine, reloader TLSReloader, now time.Time, log *slog.Logger) error {
	content, changed, err := c.asked.Changed(reloader.TLSFiles().CertFile())
	if err != nil {
		return err
	}
	presenter, presents := engine.(CertificatePresenter)
	if changed {
		err := reloader.ReloadTLS(ctx)
		if !presents {
			// Nothing tells whether it took it: a failed reload is
			// asked again at the next poll.
			if err == nil {
				c.asked.Applied(content)
				c.served = &content
			}
			return err
		}
		// A reload the engine refuses (MariaDB's, of a certificate it
		// cannot load) is asked again as one it ignored.
		c.askedToLoad(content, now, reloadAgainAfter)
		if err != nil {
			return err
		}
	}
	if !presents || c.asked.applied == nil || (c.served != nil && *c.served == *c.asked.applied) || now.Before(c.probeAt) {
		return nil
	}
	asked := *c.asked.applied
	presented, err := presenter.PresentedCertificate(ctx)
	switch {
	case err != nil:
		// What it serves now is not known: the reload asked may have
		// taken since.
		c.served = nil
		err = fmt.Errorf("asking the engine which certificate it serves: %w", err)
	case bytes.Equal(presented, pki.LeafCertificate([]byte(asked))):
		c.served, c.seen = &asked, &asked
		log.Info("the engine serves the mounted server certificate")
		return nil
	case c.seen != nil && bytes.Equal(presented, pki.LeafCertificate([]byte(*c.seen))):
		c.served = c.seen
	default:
		c.served = nil
	}
	// It presents another one, or did not answer: asked again less and
	// less often, and by when it is asked again to load the mounted one.
	c.probeAt, c.probeAgain = now.Add(c.probeAgain), min(2*c.probeAgain, backOffAtMost)
	if reask := c.askedAt.Add(c.askAgain); reask.After(now) && c.probeAt.After(reask) {
		c.probeAt = reask
	}
	if now.Sub(c.askedAt) < c.askAgain {
		return err
	}
	log.Info("the engine does not serve the mounted certificate: asking it to load it again",
		"askedBefore", now.Sub(c.askedAt).Round(time.Second).String())
	// Asked what it serves once soon after, then as rarely as before.
	c.askedAt, c.askAgain = now, min(2*c.askAgain, backOffAtMost)
	c.probeAt = now.Add(probeAgainAfter)
	return errors.Join(err, reloader.ReloadTLS(ctx))
}

// followClientAuthority has the running engine reload when the mounted
// client authority changed since it read it last. Nothing tells whether
// it took it: a reload that failed is asked again reloadAgainAfter later,
// then twice as long each time (at most backOffAtMost); a missing file
// leaves the engine with the one it has.
func (c *engineCertificate) followClientAuthority(ctx context.Context, reloader TLSReloader, now time.Time, log *slog.Logger) error {
	if c.clientAuthority.applied == nil || now.Before(c.clientAuthorityRetry) {
		return nil
	}
	content, changed, err := c.clientAuthority.Changed(reloader.TLSFiles().ClientCAFile())
	if err != nil || !changed {
		return nil
	}
	if err := reloader.ReloadTLS(ctx); err != nil {
		c.clientAuthorityBackOff = min(max(2*c.clientAuthorityBackOff, reloadAgainAfter), backOffAtMost)
		c.clientAuthorityRetry = now.Add(c.clientAuthorityBackOff)
		return fmt.Errorf("reloading the client authority: %w", err)
	}
	c.clientAuthority.Applied(content)
	c.clientAuthorityBackOff, c.clientAuthorityRetry = 0, time.Time{}
	log.Info("the engine reloaded the mounted client certificate authority")
	return nil
}

// clientAuthorityArrived says why the engine must start again, empty when
// it need not: it needs the client authority to verify the application
// user's certificate (ClientVerifier), started without it, and the
// kubelet has mounted it since; the engine reads it only as it starts.
func clientAuthorityArrived(engine Engine) string {
	verifier, ok := engine.(ClientVerifier)
	reloader, files := engine.(TLSReloader)
	if !ok || !files {
		return ""
	}
	if verifies, needs := verifier.VerifiesClients(); !needs || verifies || !reloader.TLSFiles().VerifiesClients() {
		return ""
	}
	return "the client certificate authority is mounted now, and the engine started without it"
}

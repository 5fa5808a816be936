package postgres

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/dbpilot/dbpilot/instance"
)

// sslRequestCode opens a PostgreSQL session that asks for TLS.
const sslRequestCode = 80877103

// probeTimeout bounds asking a server whether it serves TLS.
const probeTimeout = 5 * time.Second

// errNoAnswer is ServesVerifiedTLS's error when no server answered.
var errNoAnswer = errors.New("no answer")

// ServesVerifiedTLS asks the PostgreSQL server at host whether it serves
// TLS and, when it does, completes a handshake that verifies its
// certificate for host against the authority in tlsFiles. It logs in as
// no one. It reports false, with no error, when the server answers that
// it serves no TLS (one started before its pod had a certificate); an
// answer it cannot verify is an error, and so is no answer (errNoAnswer).
func ServesVerifiedTLS(ctx context.Context, host string, port int, tlsFiles instance.TLS) (bool, error) {
	config, err := tlsFiles.VerifyingConfig(host)
	if err != nil {
		return false, err
	}
	_, serves, err := handshake(ctx, host, port, config)
	if errors.Is(err, errHandshake) {
		err = fmt.Errorf("verifying %s's certificate: %w", host, err)
	}
	return serves, err
}

// errHandshake is handshake's error when the TLS handshake failed.
var errHandshake = errors.New("TLS handshake")

var _ instance.CertificatePresenter = (*Engine)(nil)

// PresentedCertificate completes a TLS handshake with the running server
// on the loopback address, as a client that logs in as no one (PostgreSQL
// logs nothing of a session that ends before its startup message), and
// returns the leaf certificate it presented. It verifies nothing: the
// caller compares the certificate with the mounted one, byte for byte.
func (e *Engine) PresentedCertificate(ctx context.Context) ([]byte, error) {
	// The certificate is compared, not verified: it need not name the
	// loopback address.
	config := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // compared byte for byte
	state, serves, err := handshake(ctx, "127.0.0.1", e.port(), config)
	switch {
	case err != nil:
		return nil, err
	case !serves:
		return nil, errors.New("the server serves no TLS")
	}
	return state.PeerCertificates[0].Raw, nil
}

// handshake asks the PostgreSQL server at host:port for TLS and, when it
// serves it, completes a handshake with config and hangs up; it reports
// false, with no error, when the server answers that it serves no TLS.
func handshake(ctx context.Context, host string, port int, config *tls.Config) (tls.ConnectionState, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return tls.ConnectionState{}, false, fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	request := make([]byte, 8)
	binary.BigEndian.PutUint32(request[0:4], 8)
	binary.BigEndian.PutUint32(request[4:8], sslRequestCode)
	if _, err := conn.Write(request); err != nil {
		return tls.ConnectionState{}, false, fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	answer := make([]byte, 1)
	if _, err := conn.Read(answer); err != nil {
		return tls.ConnectionState{}, false, fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	switch answer[0] {
	case 'N':
		return tls.ConnectionState{}, false, nil
	case 'S':
	default:
		return tls.ConnectionState{}, false, fmt.Errorf("%s answered %q to a TLS request", host, answer[0])
	}
	session := tls.Client(conn, config)
	defer session.Close()
	if err := session.HandshakeContext(ctx); err != nil {
		return tls.ConnectionState{}, false, fmt.Errorf("%w: %w", errHandshake, err)
	}
	return session.ConnectionState(), true, nil
}

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
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false, fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	request := make([]byte, 8)
	binary.BigEndian.PutUint32(request[0:4], 8)
	binary.BigEndian.PutUint32(request[4:8], sslRequestCode)
	if _, err := conn.Write(request); err != nil {
		return false, fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	answer := make([]byte, 1)
	if _, err := conn.Read(answer); err != nil {
		return false, fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	switch answer[0] {
	case 'N':
		return false, nil
	case 'S':
	default:
		return false, fmt.Errorf("%s answered %q to a TLS request", host, answer[0])
	}
	if err := tls.Client(conn, config).HandshakeContext(ctx); err != nil {
		return false, fmt.Errorf("verifying %s's certificate: %w", host, err)
	}
	return true, nil
}

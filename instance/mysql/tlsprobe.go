package mysql

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/dbpilot/dbpilot/instance"
)

// The client capabilities of a TLS request (the protocol's SSLRequest):
// the 4.1 protocol, its authentication and plugins, and TLS.
const (
	clientLongPassword       = 0x1
	clientProtocol41         = 0x200
	clientSSL                = 0x800
	clientSecureConnection   = 0x8000
	clientPluginAuth         = 0x80000
	tlsRequestCapabilities   = clientLongPassword | clientProtocol41 | clientSSL | clientSecureConnection | clientPluginAuth
	tlsRequestMaxPacket      = 1 << 24
	tlsRequestCharsetUTF8MB4 = 45
	// probeTimeout bounds a TLS handshake with the server.
	probeTimeout = 5 * time.Second
)

var _ instance.CertificatePresenter = (*Engine)(nil)

// PresentedCertificate completes a TLS handshake with the running server
// on the loopback address and its own port (asked over the socket), as a
// client that logs in as no one, and returns the leaf certificate it
// presented. It verifies nothing: the caller compares the certificate
// with the mounted one, byte for byte. MariaDB logs a warning of each
// such session (closed without authentication).
func (e *Engine) PresentedCertificate(ctx context.Context) ([]byte, error) {
	port, err := e.serverPort(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if err := requestTLS(conn); err != nil {
		return nil, err
	}
	// The certificate is compared, not verified: it need not name the
	// loopback address.
	session := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}) //nolint:gosec // compared byte for byte
	defer session.Close()
	if err := session.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return session.ConnectionState().PeerCertificates[0].Raw, nil
}

// serverPort is the TCP port the server listens on.
func (e *Engine) serverPort(ctx context.Context) (int, error) {
	db, err := e.connect(ctx, instance.Credentials{})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var port int
	if err := db.QueryRowContext(ctx, "SELECT @@port").Scan(&port); err != nil {
		return 0, fmt.Errorf("reading the server's port: %w", err)
	}
	return port, nil
}

// requestTLS reads the server's greeting on conn and answers it with a TLS
// request, after which the TLS handshake starts.
func requestTLS(conn net.Conn) error {
	header := make([]byte, 4)
	if _, err := io.ReadFull(conn, header); err != nil {
		return fmt.Errorf("reading the server's greeting: %w", err)
	}
	greeting := make([]byte, int(header[0])|int(header[1])<<8|int(header[2])<<16)
	if _, err := io.ReadFull(conn, greeting); err != nil {
		return fmt.Errorf("reading the server's greeting: %w", err)
	}
	capabilities, err := greetingCapabilities(greeting)
	if err != nil {
		return err
	}
	if capabilities&clientSSL == 0 {
		return errors.New("the server serves no TLS")
	}
	// A 32-byte packet, the second of the exchange: capabilities, the
	// largest packet, the character set, and 23 bytes of zeros.
	request := make([]byte, 4+32)
	request[0], request[3] = 32, 1
	binary.LittleEndian.PutUint32(request[4:8], tlsRequestCapabilities)
	binary.LittleEndian.PutUint32(request[8:12], tlsRequestMaxPacket)
	request[12] = tlsRequestCharsetUTF8MB4
	if _, err := conn.Write(request); err != nil {
		return fmt.Errorf("requesting TLS: %w", err)
	}
	return nil
}

// greetingCapabilities reads the low 16 bits of the capabilities from a
// server's greeting (protocol 10): after the version byte, the server's
// version (NUL-terminated), the connection id and 8 bytes of
// authentication data and a filler byte. An error packet is the server's
// refusal.
func greetingCapabilities(greeting []byte) (uint32, error) {
	if len(greeting) > 3 && greeting[0] == 0xff {
		return 0, fmt.Errorf("the server refused the connection: %s", printable(greeting[3:]))
	}
	if len(greeting) == 0 || greeting[0] != 10 {
		return 0, errors.New("the server's greeting is not of protocol 10")
	}
	end := 1
	for end < len(greeting) && greeting[end] != 0 {
		end++
	}
	at := end + 1 + 4 + 8 + 1
	if at+2 > len(greeting) {
		return 0, errors.New("the server's greeting is too short")
	}
	return uint32(binary.LittleEndian.Uint16(greeting[at : at+2])), nil
}

// printable keeps an error message's printable ASCII.
func printable(b []byte) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c >= 0x20 && c < 0x7f {
			out = append(out, c)
		}
	}
	return string(out)
}

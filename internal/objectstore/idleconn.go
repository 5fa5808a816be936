package objectstore

import (
	"context"
	"net"
	"time"
)

// DefaultIdleTimeout is how long a connection to the store may move no
// byte either way before it fails: long enough for a slow store (the
// client already gives up on an answer's headers after a minute), short
// enough that a store that hangs fails a backup rather than holding it,
// and what waits for it (a hibernation), for ever.
const DefaultIdleTimeout = 3 * time.Minute

// idleDialer dials connections that fail once they have moved no byte for
// idle (idleConn).
func idleDialer(dial func(ctx context.Context, network, address string) (net.Conn, error), idle time.Duration) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		conn, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return &idleConn{Conn: conn, idle: idle}, nil
	}
}

// idleConn moves each read's and write's deadline idle ahead, so a
// transfer that makes progress goes on for as long as it takes and one
// that stalls (a store whose process hangs keeps its connections open, and
// a write to it blocks once the buffers are full) fails with a timeout.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(b []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *idleConn) Write(b []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

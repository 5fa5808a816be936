package localcluster

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortsLieBelowTheEphemeralRange: the ports are distinct, below
// the range outgoing connections take their source ports from, and free.
func TestFreePortsLieBelowTheEphemeralRange(t *testing.T) {
	ports, err := freePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	end := ephemeralStart()
	seen := map[int]bool{}
	for _, port := range ports {
		if port < lowestPort || port >= end || seen[port] {
			t.Errorf("port %d: want distinct ports from %d below %d", port, lowestPort, end)
		}
		seen[port] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Errorf("port %d is not free: %v", port, err)
			continue
		}
		l.Close()
	}
}

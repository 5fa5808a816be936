package localcluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
)

// FreePort returns a TCP port on 127.0.0.1 that is free now.
func FreePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// Where freePorts looks: below the kernel's ephemeral range, from
// lowestPort on. A port the kernel hands out for 127.0.0.1:0 and that is
// closed again is soon the source port of some process's outgoing
// connection, and a server started there next finds it taken (MariaDB's
// "Bind on TCP/IP port: Address already in use", seen once in CI while
// the real-node suite ran beside the instance tests). Below that range
// only a listener can take a port.
const (
	lowestPort = 10000
	// ephemeralRangeFile holds the kernel's ephemeral range; Linux's
	// default starts at defaultEphemeralStart.
	ephemeralRangeFile    = "/proc/sys/net/ipv4/ip_local_port_range"
	defaultEphemeralStart = 32768
	// portTries bounds the random picks before freePorts gives up.
	portTries = 1000
)

// freePorts reserves n distinct free TCP ports on 127.0.0.1, picked at
// random below the ephemeral range (ephemeralStart); each is free when
// returned.
func freePorts(n int) ([]int, error) {
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	end := ephemeralStart()
	if end-lowestPort < 1000 {
		return nil, fmt.Errorf("finding a free port: the ephemeral range starts at %d, leaving too few ports from %d", end, lowestPort)
	}
	ports := make([]int, 0, n)
	for try := 0; len(ports) < n; try++ {
		if try == portTries {
			return nil, fmt.Errorf("finding a free port: %d ports between %d and %d taken", portTries, lowestPort, end)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(lowestPort+rand.IntN(end-lowestPort))))
		if err != nil {
			continue
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ephemeralStart is the first port of the kernel's ephemeral range.
func ephemeralStart() int {
	data, err := os.ReadFile(ephemeralRangeFile)
	var start int
	if err != nil {
		return defaultEphemeralStart
	}
	if _, err := fmt.Sscan(string(data), &start); err != nil {
		return defaultEphemeralStart
	}
	return start
}

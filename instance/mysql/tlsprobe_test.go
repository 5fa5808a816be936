package mysql

import (
	"strings"
	"testing"
)

// greeting is a protocol-10 greeting of a server whose low capabilities
// are low.
func greeting(version string, low uint16) []byte {
	g := append([]byte{10}, version...)
	g = append(g, 0)
	g = append(g, 1, 0, 0, 0)                  // connection id
	g = append(g, []byte("abcdefgh")...)       // authentication data
	g = append(g, 0)                           // filler
	g = append(g, byte(low), byte(low>>8))     // capabilities
	return append(g, 45, 2, 0, 0xff, 0x81, 21) // the rest, unread
}

func TestGreetingCapabilities(t *testing.T) {
	if got, err := greetingCapabilities(greeting("10.11.6-MariaDB", 0xfffe)); err != nil || got&clientSSL == 0 {
		t.Errorf("a greeting offering TLS: capabilities %#x, %v", got, err)
	}
	if got, err := greetingCapabilities(greeting("10.11.6-MariaDB", 0xfffe&^clientSSL)); err != nil || got&clientSSL != 0 {
		t.Errorf("a greeting without TLS: capabilities %#x, %v", got, err)
	}
	refusal := append([]byte{0xff, 0x69, 0x04}, "Host '127.0.0.1' is blocked\x00"...)
	if _, err := greetingCapabilities(refusal); err == nil || !strings.Contains(err.Error(), "Host '127.0.0.1' is blocked") {
		t.Errorf("an error packet: %v, want the server's message", err)
	}
	if _, err := greetingCapabilities(greeting("10.11.6-MariaDB", 0)[:20]); err == nil {
		t.Error("a cut greeting was read")
	}
}

// Command realnode-check exits 0 when this machine can run the local
// cluster's real node, and otherwise says why on stderr and exits 1. The
// Makefile uses it to choose between the real node and its fallbacks.
package main

import (
	"fmt"
	"os"

	"github.com/dbpilot/dbpilot/internal/localcluster"
)

func main() {
	if err := localcluster.RealNodeAvailable(); err != nil {
		fmt.Fprintf(os.Stderr, "no real node on this machine: %v\n", err)
		os.Exit(1)
	}
}

package memlimit

import (
	"os"
	"runtime/debug"
)

// goGCEnv is the runtime's own garbage collector setting, which always
// wins.
const goGCEnv = "GOGC"

// DefaultGCPercent is the manager's garbage collector target: a collection
// starts when the heap has grown by half of what the last one left live,
// not by all of it as with Go's default of 100. Nearly all of the manager's
// live heap is its caches, which live as long as the process, so the
// default mostly doubles the memory those caches take for garbage; at 50
// the manager's peak memory per Database drops by about a third for a few
// percent more CPU (docs/benchmarks.md). Prometheus lowers its own default
// for the same reason.
const DefaultGCPercent = 50

// GCPercentFromEnvironment sets DefaultGCPercent unless GOGC is set, and
// returns the garbage collector target in effect, -1 for off.
func GCPercentFromEnvironment() int {
	if _, set := os.LookupEnv(goGCEnv); set {
		current := debug.SetGCPercent(100)
		debug.SetGCPercent(current)
		return current
	}
	debug.SetGCPercent(DefaultGCPercent)
	return DefaultGCPercent
}

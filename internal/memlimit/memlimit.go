// Package memlimit sets the Go runtime's memory settings for the manager:
// a soft memory limit a little below the container's memory limit, so the
// garbage collector works harder as the manager's caches grow instead of
// the kernel killing it, and a garbage collector target suited to a heap
// that is mostly long-lived caches.
package memlimit

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
)

// LimitEnv carries the container's memory limit in bytes; the manager's
// Deployment fills it from the downward API (resourceFieldRef
// limits.memory).
const LimitEnv = "DBPILOT_MEMORY_LIMIT"

// goMemLimitEnv is the runtime's own setting, which always wins.
const goMemLimitEnv = "GOMEMLIMIT"

// heapShare is the part of the container limit the Go runtime may fill; the
// rest is for memory it does not manage (thread stacks, mappings).
const heapShare = 0.9

// SoftLimit returns the runtime memory limit for a container limit of
// containerLimit bytes, and false when none applies: no container limit, or
// GOMEMLIMIT set by the user.
func SoftLimit(containerLimit string, goMemLimitSet bool) (int64, bool, error) {
	if containerLimit == "" || goMemLimitSet {
		return 0, false, nil
	}
	limit, err := strconv.ParseInt(containerLimit, 10, 64)
	if err != nil || limit <= 0 {
		return 0, false, fmt.Errorf("%s=%q: want the container's memory limit in bytes", LimitEnv, containerLimit)
	}
	return int64(float64(limit) * heapShare), true, nil
}

// FromEnvironment applies the soft limit the process environment calls for
// and returns it, 0 when none applies.
func FromEnvironment() (int64, error) {
	_, goMemLimitSet := os.LookupEnv(goMemLimitEnv)
	limit, ok, err := SoftLimit(os.Getenv(LimitEnv), goMemLimitSet)
	if err != nil || !ok {
		return 0, err
	}
	debug.SetMemoryLimit(limit)
	return limit, nil
}

package scale_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// processMemory is a process's resident memory now and at its peak, in
// KiB, from /proc/PID/status.
func processMemory(pid int) (rssKiB, peakKiB int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		field, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		switch field {
		case "VmRSS":
			rssKiB = kib
		case "VmHWM":
			peakKiB = kib
		default:
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status %s: %w", pid, field, err)
		}
	}
	if rssKiB == 0 || peakKiB == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status has no VmRSS or VmHWM", pid)
	}
	return rssKiB, peakKiB, nil
}

// clockTicksPerSecond is USER_HZ, 100 on every Linux architecture Go
// supports.
const clockTicksPerSecond = 100

// processCPUSeconds is the user plus system CPU time a process used, from
// /proc/PID/stat.
func processCPUSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// the last ')'.
	end := strings.LastIndexByte(string(data), ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(data)[end+1:])
	// After the name: state is field 3 of stat(5); utime and stime are 14
	// and 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, err := strconv.ParseInt(fields[11], 10, 64)
	if err != nil {
		return 0, err
	}
	stime, err := strconv.ParseInt(fields[12], 10, 64)
	if err != nil {
		return 0, err
	}
	return float64(utime+stime) / clockTicksPerSecond, nil
}

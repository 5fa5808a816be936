package localcluster

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// recordedGroup is a process group the real node started. A group's id is
// its leader's pid, which the kernel hands out again once the leader and
// its group are gone: after a crash, and even moments after a clean stop,
// the number may name another program's group (another test binary's
// control plane, say). The leader's start time tells the two apart.
type recordedGroup struct {
	PGID int `json:"pgid"`
	// LeaderStarted is the leader's start time, in clock ticks after boot
	// (field 22 of /proc/<pid>/stat).
	LeaderStarted uint64 `json:"leaderStarted"`
}

// recordGroup records the group pid leads, which it must still be running.
func recordGroup(pid int) (recordedGroup, error) {
	started, err := processStarted(pid)
	if err != nil {
		return recordedGroup{}, err
	}
	return recordedGroup{PGID: pid, LeaderStarted: started}, nil
}

// killIfStillOurs kills the group when its recorded leader still runs.
// When the leader is gone the number is left alone: it may be reused by
// now, and what the node's processes forked is found by killLeftovers'
// other means (the containerd socket on a command line, the node's
// cgroups).
func (g recordedGroup) killIfStillOurs() {
	started, err := processStarted(g.PGID)
	if err != nil || started != g.LeaderStarted {
		return
	}
	_ = syscall.Kill(-g.PGID, syscall.SIGKILL)
}

// processStarted reads a process's start time, in clock ticks after boot.
func processStarted(pid int) (uint64, error) {
	fields, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	const startTime = 22 - 3
	if len(fields) <= startTime {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command name", pid, len(fields))
	}
	return strconv.ParseUint(fields[startTime], 10, 64)
}

// statFields are the fields of /proc/<pid>/stat after the command name:
// the first is field 3 of proc(5), the state.
func statFields(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	// The command name (field 2) is in parentheses and may hold spaces and
	// parentheses itself.
	stat := string(data)
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	return strings.Fields(stat[end+1:]), nil
}

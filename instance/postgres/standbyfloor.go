package postgres

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// standbyMinimums are the settings a standby replays WAL with only when
// they are at least what its primary last ran with, which the control file
// records (by pg_controldata's names): lower, and it stops replaying. A
// roll restarts the replicas before the primary, so lowering one of them
// (a smaller tier's max_connections, or spec.parameters) would stop every
// replica's replay until the primary restarts, which the roll waits on
// them for.
var standbyMinimums = map[string]string{
	"max_connections":           "max_connections setting",
	"max_worker_processes":      "max_worker_processes setting",
	"max_wal_senders":           "max_wal_senders setting",
	"max_prepared_transactions": "max_prepared_xacts setting",
	"max_locks_per_transaction": "max_locks_per_xact setting",
}

// standbyFloorTimeout bounds reading the control file and the
// configuration before a standby starts.
const standbyFloorTimeout = 10 * time.Second

// standbyFloorArgs keep a standby's standbyMinimums at the values of the
// control file where its configuration is lower ("-c" options, which go
// over the configuration): once the primary restarts with the lower
// values, its WAL says so, and the standby's next start uses them. Best
// effort: what cannot be read adds nothing.
func (e *Engine) standbyFloorArgs() []string {
	if _, err := os.Stat(filepath.Join(e.DataDir, standbySignal)); err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), standbyFloorTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "pg_controldata", "-D", e.DataDir)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	primary := controlSettings(string(out))
	var args []string
	for _, setting := range slices.Sorted(maps.Keys(standbyMinimums)) {
		want, ok := primary[setting]
		if !ok {
			continue
		}
		configured, err := e.configuredInt(ctx, setting)
		if err == nil && configured < want {
			args = append(args, "-c", setting+"="+strconv.Itoa(want))
		}
	}
	return args
}

// controlSettings reads the standbyMinimums pg_controldata prints, by
// setting name.
func controlSettings(out string) map[string]int {
	settings := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		label, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for setting, controlLabel := range standbyMinimums {
			if label == controlLabel {
				if n, err := strconv.Atoi(strings.TrimSpace(value)); err == nil {
					settings[setting] = n
				}
			}
		}
	}
	return settings
}

// configuredInt is an integer setting as the server would start with it
// from its configuration files (postgres -C).
func (e *Engine) configuredInt(ctx context.Context, setting string) (int, error) {
	args := []string{"-C", setting, "-D", e.DataDir}
	if e.ConfigFile != "" {
		args = append(args, "-c", "config_file="+e.ConfigFile)
	}
	out, err := exec.CommandContext(ctx, "postgres", args...).Output()
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, errors.New("postgres -C " + setting + ": not an integer")
	}
	return n, nil
}

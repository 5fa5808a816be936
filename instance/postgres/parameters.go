package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// The Database's spec.parameters reach the server through
// postgresql.auto.conf, the file ALTER SYSTEM writes and the server reads
// after its configuration file. The program merges the lines of the
// mounted parameters file (layout.PostgresParametersFile) into it before
// the server starts and whenever the file changes, then has a running
// server reload. A candidate is first read by the server binary itself
// (postgres -C reads the configuration as a start would, and refuses an
// unknown name or an invalid value), and every library
// shared_preload_libraries names must be installed: a file the server
// would not start with never reaches the data directory. A refused file
// leaves the settings as they were, and the program reports why.

// parametersRecord, in PGDATA, names the settings of postgresql.auto.conf
// that came from spec.parameters: only those are reset when they leave
// it, so a setting made by hand with ALTER SYSTEM stays unless
// spec.parameters names it.
const parametersRecord = "dbpilot-parameters"

// parameter is one line of the parameters file.
type parameter struct{ name, line string }

// parseParameters reads the settings of a file in postgresql.conf's
// syntax, one per line; blank lines and comments are skipped.
func parseParameters(content string) []parameter {
	var params []parameter
	for _, line := range strings.Split(content, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		name, _, _ := strings.Cut(trimmed, "=")
		params = append(params, parameter{name: strings.TrimSpace(name), line: trimmed})
	}
	return params
}

// mergeParameters is postgresql.auto.conf with the settings named in
// managed (those spec.parameters set before) and in params replaced by
// params' lines.
func mergeParameters(existing string, managed []string, params []parameter) string {
	names := slices.Clone(managed)
	for _, p := range params {
		names = append(names, p.name)
	}
	merged := withoutSettings(existing, names)
	for _, p := range params {
		merged += p.line + "\n"
	}
	return merged
}

// parametersFile is the mounted file of spec.parameters, beside the
// configuration file.
func (e *Engine) parametersFile() string {
	return filepath.Join(filepath.Dir(e.ConfigFile), layout.PostgresParametersFile)
}

// FollowParameters applies the parameters file when it changed since it
// was last applied or refused (the first call applies it), reloading the
// server when running. A file the server refuses is not applied: the
// call returns why, and the status reports it (ParametersError) until a
// file is applied. An error is only returned for what a later call may
// get past.
func (e *Engine) FollowParameters(ctx context.Context, running bool) (string, error) {
	if e.ConfigFile == "" {
		return "", nil
	}
	content, err := os.ReadFile(e.parametersFile())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if e.parameters.Seen(string(content)) {
		return "", nil
	}
	if initialized, err := e.Initialized(); err != nil || !initialized {
		return "", err
	}
	managed, err := e.readParametersRecord()
	if err != nil {
		return "", err
	}
	params := parseParameters(string(content))
	if len(params) == 0 && len(managed) == 0 {
		// Nothing set, nothing to reset: no check to run.
		e.parameters.Settle(string(content), "")
		return "", nil
	}
	autoConf := filepath.Join(e.DataDir, "postgresql.auto.conf")
	existing, err := os.ReadFile(autoConf)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	candidate := mergeParameters(string(existing), managed, params)
	if candidate != string(existing) {
		refused, err := e.checkParameters(ctx, candidate)
		if err != nil {
			return "", fmt.Errorf("checking spec.parameters: %w", err)
		}
		if refused != "" {
			e.parameters.Settle(string(content), refused)
			return refused, nil
		}
		// The record names the former settings and the new ones until
		// the file is written, so none is left behind should this stop
		// between the two.
		if err := e.writeParametersRecord(append(slices.Clone(managed), names(params)...)); err != nil {
			return "", err
		}
		if err := instance.WriteFileDurably(autoConf, []byte(candidate)); err != nil {
			return "", err
		}
	}
	if err := e.writeParametersRecord(names(params)); err != nil {
		return "", err
	}
	if running && candidate != string(existing) {
		refused, err := e.reloadOrRollBack(ctx, string(existing), managed)
		if err != nil {
			return "", err
		}
		if refused != "" {
			e.parameters.Settle(string(content), refused)
			return refused, nil
		}
	}
	e.parameters.Settle(string(content), "")
	return "", nil
}

func names(params []parameter) []string {
	var n []string
	for _, p := range params {
		n = append(n, p.name)
	}
	return n
}

// readParametersRecord names the settings spec.parameters last set.
func (e *Engine) readParametersRecord() ([]string, error) {
	content, err := os.ReadFile(filepath.Join(e.DataDir, parametersRecord))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(content)), nil
}

func (e *Engine) writeParametersRecord(names []string) error {
	slices.Sort(names)
	content := strings.Join(slices.Compact(names), "\n")
	if content != "" {
		content += "\n"
	}
	path := filepath.Join(e.DataDir, parametersRecord)
	existing, err := os.ReadFile(path)
	if err == nil && string(existing) == content || errors.Is(err, os.ErrNotExist) && content == "" {
		return nil
	}
	return instance.WriteFileDurably(path, []byte(content))
}

// checkParameters has the server binary read the configuration file with
// the candidate postgresql.auto.conf, in a scratch data directory, and
// says why a start or a new session would fail: a name or value it
// refuses, or a library a preload setting names that is not installed.
// "" accepts it.
func (e *Engine) checkParameters(ctx context.Context, candidate string) (string, error) {
	dir, err := os.MkdirTemp("", "dbpilot-parameters-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	config, err := os.ReadFile(e.ConfigFile)
	if err != nil {
		return "", err
	}
	scratchConfig := filepath.Join(dir, "postgresql.conf")
	if err := os.WriteFile(scratchConfig, append(config, []byte("\ndata_directory = "+literal(dir)+"\n")...), 0o600); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "postgresql.auto.conf"), []byte(candidate), 0o600); err != nil {
		return "", err
	}
	for _, libraries := range preloadSettings {
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "postgres", "-C", libraries.setting, "-D", dir, "-c", "config_file="+scratchConfig)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			var exit *exec.ExitError
			if !errors.As(err, &exit) || ctx.Err() != nil {
				return "", err
			}
			return ServerRefusal(stderr.String()), nil
		}
		missing, err := missingLibraries(cmd.Path, libraries, strings.TrimSpace(stdout.String()))
		if missing != "" || err != nil {
			return missing, err
		}
	}
	return "", nil
}

// preloadLibraries is a setting that names libraries the server loads,
// and where it looks for them ($libdir, or a directory in it).
type preloadLibraries struct{ setting, dir string }

// preloadSettings name libraries that must be installed: at the start
// (shared), or at every new session, the program's own included
// (session, local), which a missing one would refuse.
var preloadSettings = []preloadLibraries{
	{"shared_preload_libraries", ""},
	{"session_preload_libraries", ""},
	{"local_preload_libraries", "plugins"},
}

// refusalNoise are the parts of the server's messages that name the
// scratch directory or add nothing.
var (
	refusalLocation = regexp.MustCompile(` in file "[^"]*" line [0-9]+`)
	refusalPrefix   = regexp.MustCompile(`^.*?\b(LOG|FATAL|ERROR|DETAIL|HINT): +`)
)

// ServerRefusal is what the server said as it refused a configuration:
// its messages, without their prefixes, the scratch file's name and the
// closing "contains errors".
func ServerRefusal(output string) string {
	var messages []string
	for _, line := range strings.Split(output, "\n") {
		if !refusalPrefix.MatchString(line) {
			continue
		}
		message := refusalLocation.ReplaceAllString(refusalPrefix.ReplaceAllString(line, ""), "")
		if strings.HasPrefix(message, "skipping missing configuration file") || strings.HasSuffix(message, "contains errors") {
			continue
		}
		messages = append(messages, message)
	}
	if len(messages) == 0 {
		return "the server refused the configuration: " + strings.TrimSpace(output)
	}
	return strings.Join(messages, "; ")
}

// missingLibraries says which of the libraries a preload setting lists
// (its value as the server reads it) are not installed beside the server
// at serverPath (its package's lib directory, $libdir), or "".
func missingLibraries(serverPath string, preload preloadLibraries, libraries string) (string, error) {
	if libraries == "" {
		return "", nil
	}
	server, err := filepath.EvalSymlinks(serverPath)
	if err != nil {
		return "", err
	}
	libdir := filepath.Join(filepath.Dir(filepath.Dir(server)), "lib")
	var missing []string
	for _, library := range strings.Split(libraries, ",") {
		library = strings.Trim(strings.TrimSpace(library), `"`)
		if library == "" {
			continue
		}
		path := strings.Replace(library, "$libdir", libdir, 1)
		if !strings.Contains(path, "/") {
			path = filepath.Join(libdir, preload.dir, path)
		}
		if filepath.Ext(path) == "" {
			path += ".so"
		}
		if _, err := os.Stat(path); err != nil {
			missing = append(missing, fmt.Sprintf("%q", library))
		}
	}
	if len(missing) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%s names %s, not installed in %s: the server would refuse to start or every new session",
		preload.setting, strings.Join(missing, ", "), filepath.Join(libdir, preload.dir)), nil
}

// sessionCheckAttempts and sessionCheckInterval bound how long a new
// session is tried after a reload before the settings are taken back.
const (
	sessionCheckAttempts = 3
	sessionCheckInterval = 500 * time.Millisecond
)

// reloadOrRollBack has the server reload the settings just written, and
// takes them back (formerAutoConf and formerRecord written again, the
// server reloaded) when a new session then fails: settings that refuse
// every session would lock out the program too, and with it any later
// fix. The reload is a signal to the postmaster, which needs no session.
func (e *Engine) reloadOrRollBack(ctx context.Context, formerAutoConf string, formerRecord []string) (string, error) {
	if err := e.signalReload(); err != nil {
		return "", fmt.Errorf("reloading spec.parameters: %w", err)
	}
	var failure error
	for range sessionCheckAttempts {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(sessionCheckInterval):
		}
		if failure = e.newSession(ctx); failure == nil {
			return "", nil
		}
	}
	if err := instance.WriteFileDurably(filepath.Join(e.DataDir, "postgresql.auto.conf"), []byte(formerAutoConf)); err != nil {
		return "", err
	}
	if err := e.writeParametersRecord(formerRecord); err != nil {
		return "", err
	}
	if err := e.signalReload(); err != nil {
		return "", fmt.Errorf("reloading the former settings: %w", err)
	}
	return fmt.Sprintf("a new session fails with them (%v), so the former settings are back", failure), nil
}

// signalReload has the postmaster (postmaster.pid's first line) read its
// configuration again.
func (e *Engine) signalReload() error {
	content, err := os.ReadFile(filepath.Join(e.DataDir, "postmaster.pid"))
	if err != nil {
		return err
	}
	line, _, _ := strings.Cut(string(content), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return fmt.Errorf("postmaster.pid names no process: %q", line)
	}
	return syscall.Kill(pid, syscall.SIGHUP)
}

// newSession opens a session and runs a statement in it.
func (e *Engine) newSession(ctx context.Context) error {
	conn, err := e.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "SELECT 1")
	return err
}

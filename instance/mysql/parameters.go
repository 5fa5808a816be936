package mysql

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	driver "github.com/go-sql-driver/mysql"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// The Database's spec.parameters reach a MariaDB server as options of its
// command line (--name=value), after the configuration files, so they go
// over the tier's. The program reads the mounted parameters file
// (layout.MySQLParametersFile, JSON) before the server starts and whenever
// it changes. A new set is first read by the server binary itself
// (mariadbd --help --verbose reads every option as a start would and
// refuses an unknown name or an invalid value); an accepted set is kept in
// the datadir (acceptedParameters), which the next start runs with, and a
// running server takes each changed variable with SET GLOBAL, at the value
// the configuration now gives it (a variable dropped from the set goes back
// to the configuration's or the server's default). Those the server only
// takes at a start are reported as waiting for a restart. A refused set
// changes nothing, not even at the next start, and the program reports
// why.

// acceptedParameters, in the datadir, is the last set of spec.parameters
// the server binary accepted, as JSON: the server runs with it.
const acceptedParameters = "dbpilot-parameters.json"

// parametersFile is the mounted file of spec.parameters, beside the
// generated configuration.
func (e *Engine) parametersFile() string {
	return filepath.Join(filepath.Dir(e.ConfigFile), layout.MySQLParametersFile)
}

// readParameters reads a set of parameters as JSON; a missing or empty
// file is the empty set.
func readParameters(path string) (map[string]string, string, error) {
	content, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || err == nil && len(bytes.TrimSpace(content)) == 0 {
		return map[string]string{}, string(content), nil
	}
	if err != nil {
		return nil, "", err
	}
	params := map[string]string{}
	if err := json.Unmarshal(content, &params); err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return params, string(content), nil
}

// ParameterArgs are the server's options for a set of parameters, by name.
func ParameterArgs(params map[string]string) []string {
	var args []string
	for _, name := range slices.Sorted(maps.Keys(params)) {
		args = append(args, "--"+name+"="+params[name])
	}
	return args
}

// acceptedArgs are the options of the accepted set, for the server's
// command line.
func (e *Engine) acceptedArgs() []string {
	if e.Flavor != MariaDB {
		return nil
	}
	params, _, err := readParameters(filepath.Join(e.DataDir, acceptedParameters))
	if err != nil {
		return nil
	}
	return ParameterArgs(params)
}

// FollowParameters applies the parameters file when it changed since it
// was last applied or refused (the first call applies it), setting the
// changed variables of a running server. A set the server refuses is not
// applied: the call returns why, and the status reports it
// (ParametersError) until a set is applied. An error is only returned for
// what a later call may get past.
func (e *Engine) FollowParameters(ctx context.Context, running bool) (string, error) {
	if e.ConfigFile == "" || e.Flavor != MariaDB {
		return "", nil
	}
	params, content, err := readParameters(e.parametersFile())
	if err != nil {
		return "", err
	}
	if e.parameters.Seen(content) {
		return "", nil
	}
	if initialized, err := e.Initialized(); err != nil || !initialized {
		return "", err
	}
	acceptedPath := filepath.Join(e.DataDir, acceptedParameters)
	accepted, _, err := readParameters(acceptedPath)
	if err != nil {
		return "", err
	}
	if maps.Equal(params, accepted) {
		// The server runs with the accepted set (its command line).
		e.parameters.Settle(content, "")
		return "", nil
	}
	effective, refused, err := e.checkParameters(ctx, params)
	if err != nil {
		return "", fmt.Errorf("checking spec.parameters: %w", err)
	}
	if refused != "" {
		e.parameters.Settle(content, refused)
		return refused, nil
	}
	encoded, err := json.Marshal(params)
	if err != nil {
		return "", err
	}
	// The running server first: should that fail (the server cannot be
	// reached), the set is not yet accepted, and the next call sets it
	// again, rather than take the server to run with it already.
	var waiting []string
	if running {
		if waiting, err = e.setVariables(ctx, changedNames(accepted, params), effective); err != nil {
			return "", err
		}
	}
	if err := instance.WriteFileDurably(acceptedPath, encoded); err != nil {
		return "", err
	}
	e.parameters.Await(waiting)
	e.parameters.Settle(content, "")
	return "", nil
}

// changedNames are the variables whose value the new set changes, added
// and dropped ones included.
func changedNames(former, params map[string]string) []string {
	var names []string
	for name, value := range params {
		if v, ok := former[name]; !ok || v != value {
			names = append(names, name)
		}
	}
	for name := range former {
		if _, ok := params[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// setVariables sets each variable to the value the configuration gives it
// (effective, by the server's help's names), and returns those the server
// only takes at a start: read-only ones, and any the running server
// refuses (event_scheduler takes DISABLED only at a start), which the
// start the server binary checked them for will apply. An error is
// returned only when the server cannot be reached.
func (e *Engine) setVariables(ctx context.Context, names []string, effective map[string]string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	db, err := e.connect(ctx, instance.Credentials{})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var waiting []string
	for _, name := range names {
		value, ok := effective[strings.ReplaceAll(name, "_", "-")]
		if !ok {
			waiting = append(waiting, name)
			continue
		}
		_, err := db.ExecContext(ctx, "SET GLOBAL "+name+" = "+VariableLiteral(value))
		var mysqlErr *driver.MySQLError
		switch {
		case errors.As(err, &mysqlErr):
			waiting = append(waiting, name)
		case err != nil:
			return nil, fmt.Errorf("setting %s: %w", name, err)
		}
	}
	return waiting, nil
}

// plainValue is a value SET GLOBAL takes as it is: a number or a keyword.
var plainValue = regexp.MustCompile(`^(-?[0-9]+(\.[0-9]+)?|ON|OFF|TRUE|FALSE)$`)

// VariableLiteral is a value as the server's help prints it, for SET
// GLOBAL: numbers and ON, OFF, TRUE, FALSE as they are, "(No default
// value)" as DEFAULT, anything else a quoted string.
func VariableLiteral(value string) string {
	switch {
	case value == "(No default value)":
		return "DEFAULT"
	case plainValue.MatchString(value):
		return value
	}
	return "'" + strings.NewReplacer(`\`, `\\`, "'", "''").Replace(value) + "'"
}

// checkParameters has the server binary read its configuration with the
// set's options, as a start would, in a scratch datadir: the values it
// would run with, by the help's names (dashes), or why it refuses them.
func (e *Engine) checkParameters(ctx context.Context, params map[string]string) (map[string]string, string, error) {
	dir, err := os.MkdirTemp("", "dbpilot-parameters-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	args := append(e.defaultsArgs(), "--datadir="+dir, "--help", "--verbose")
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "mariadbd", append(args, ParameterArgs(params)...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) || ctx.Err() != nil {
			return nil, "", err
		}
		return nil, ServerRefusal(stderr.String()), nil
	}
	return HelpValues(stdout.String()), "", nil
}

// serverErrorLine is one of the server's [ERROR] lines, its prefix
// (time, thread, program) in the first group.
var serverErrorLine = regexp.MustCompile(`^(.*\[ERROR\] (\S+: )?)(.*)$`)

// ServerRefusal is what the server said as it refused its options: its
// [ERROR] lines without their prefixes.
func ServerRefusal(output string) string {
	var messages []string
	for _, line := range strings.Split(output, "\n") {
		if m := serverErrorLine.FindStringSubmatch(line); m != nil {
			messages = append(messages, m[3])
		}
	}
	if len(messages) == 0 {
		return "the server refused its options: " + strings.TrimSpace(output)
	}
	return strings.Join(messages, "; ")
}

// HelpValues reads the table of variables that mariadbd --help --verbose
// ends with: name (with dashes) and value, by name.
func HelpValues(help string) map[string]string {
	values := map[string]string{}
	_, table, ok := strings.Cut(help, "\nVariables (--variable-name=value)\n")
	if !ok {
		return values
	}
	lines := strings.Split(table, "\n")
	for _, line := range lines[min(1, len(lines)):] { // after the dashes
		if strings.TrimSpace(line) == "" {
			break
		}
		name, value, _ := strings.Cut(line, " ")
		values[name] = strings.TrimSpace(value)
	}
	return values
}

package mysql

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/dbpilot/dbpilot/instance"
)

// onlineVariables are the settings of the generated configuration that
// change with the tier and that a running server takes with SET GLOBAL
// (MariaDB resizes its buffer pool in the background).
var onlineVariables = []string{"max_connections", "innodb_buffer_pool_size"}

// FollowConfig sets the online variables to the configuration file's
// values when the file changed; every variable the tiers change is online,
// so nothing waits for a restart.
func (e *Engine) FollowConfig(ctx context.Context) error {
	if e.ConfigFile == "" || e.Flavor != MariaDB {
		return nil
	}
	content, changed, err := e.followedConfig.Changed(e.ConfigFile)
	if err != nil || !changed {
		return err
	}
	statements, err := onlineStatements(content)
	if err != nil {
		return fmt.Errorf("%s: %w", e.ConfigFile, err)
	}
	db, err := e.connect(ctx, instance.Credentials{})
	if err != nil {
		return err
	}
	defer db.Close()
	for _, stmt := range statements {
		if _, err := db.ExecContext(ctx, stmt.SQL); err != nil {
			return fmt.Errorf("%s: %w", stmt.What, err)
		}
	}
	e.followedConfig.Applied(content)
	return nil
}

// onlineStatements set the online variables a configuration file gives.
func onlineStatements(config string) ([]Statement, error) {
	values := map[string]string{}
	scanner := bufio.NewScanner(strings.NewReader(config))
	for scanner.Scan() {
		key, value, ok := strings.Cut(scanner.Text(), "=")
		if ok {
			values[strings.TrimSpace(key)] = strings.TrimSpace(value)
		}
	}
	var statements []Statement
	for _, name := range onlineVariables {
		value, ok := values[name]
		if !ok {
			continue
		}
		n, err := optionNumber(value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		statements = append(statements, Statement{"setting " + name, fmt.Sprintf("SET GLOBAL %s = %d", name, n)})
	}
	return statements, nil
}

// optionNumber reads an option file's number, with an optional K, M or G
// suffix (powers of 1024), which SET GLOBAL does not take.
func optionNumber(value string) (int64, error) {
	multiplier := int64(1)
	if n := len(value); n > 0 {
		switch value[n-1] {
		case 'K', 'k':
			multiplier = 1 << 10
		case 'M', 'm':
			multiplier = 1 << 20
		case 'G', 'g':
			multiplier = 1 << 30
		}
		if multiplier > 1 {
			value = value[:n-1]
		}
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return 0, err
	}
	return n * multiplier, nil
}

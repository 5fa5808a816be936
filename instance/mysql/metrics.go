package mysql

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dbpilot/dbpilot/instance"
)

// MetricsNamespace is mysqld_exporter's prefix.
func (e *Engine) MetricsNamespace() string { return "mysql" }

// Metrics reads the server's statistics under mysqld_exporter's names:
// every numeric global status (the Com_ counters as
// mysql_global_status_commands_total by command), every numeric global
// variable, and a replica's status with its Slave_/_Master names (MySQL's
// Replica_/_Source columns are renamed, as mysqld_exporter does).
func (e *Engine) Metrics(ctx context.Context) ([]prometheus.Metric, error) {
	db, err := e.connect(ctx, instance.Credentials{})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var version string
	if err := db.QueryRowContext(ctx, "SELECT @@version").Scan(&version); err != nil {
		return nil, err
	}
	out := []prometheus.Metric{prometheus.MustNewConstMetric(versionDesc, prometheus.GaugeValue, 1, version)}
	status, err := globalValues(ctx, db, "SHOW GLOBAL STATUS", statusMetric)
	if err != nil {
		return nil, err
	}
	variables, err := globalValues(ctx, db, "SHOW GLOBAL VARIABLES", variableMetric)
	if err != nil {
		return nil, err
	}
	replica, _, fields, err := replicaFields(ctx, db)
	if err != nil {
		return nil, err
	}
	out = append(append(out, status...), variables...)
	if replica {
		out = append(out, replicaMetrics(fields)...)
	}
	return out, nil
}

var (
	versionDesc  = prometheus.NewDesc("mysql_version_info", "The server's version.", []string{"version"}, nil)
	commandsDesc = prometheus.NewDesc("mysql_global_status_commands_total",
		"Statements of each kind executed since the server started (the Com_ status variables).", []string{"command"}, nil)
)

// globalValues reads a SHOW GLOBAL statement's name/value rows and turns
// the numeric ones (ON/OFF, YES/NO count as 1/0) into series.
func globalValues(ctx context.Context, db *sql.DB, statement string, metric func(name string, value float64) prometheus.Metric) ([]prometheus.Metric, error) {
	rows, err := db.QueryContext(ctx, statement)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []prometheus.Metric
	for rows.Next() {
		var name string
		var raw sql.NullString
		if err := rows.Scan(&name, &raw); err != nil {
			return nil, err
		}
		if value, ok := numericValue(raw.String); ok {
			out = append(out, metric(strings.ToLower(name), value))
		}
	}
	return out, rows.Err()
}

func statusMetric(name string, value float64) prometheus.Metric {
	if command, ok := strings.CutPrefix(name, "com_"); ok {
		return prometheus.MustNewConstMetric(commandsDesc, prometheus.CounterValue, value, command)
	}
	desc := prometheus.NewDesc("mysql_global_status_"+validName(name), "Generic metric from SHOW GLOBAL STATUS.", nil, nil)
	return prometheus.MustNewConstMetric(desc, prometheus.UntypedValue, value)
}

func variableMetric(name string, value float64) prometheus.Metric {
	desc := prometheus.NewDesc("mysql_global_variables_"+validName(name), "Generic gauge metric from SHOW GLOBAL VARIABLES.", nil, nil)
	return prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, value)
}

// replicaMetrics are a replica's numeric status fields as
// mysql_slave_status_<field>, labelled with its primary's host.
func replicaMetrics(fields map[string]string) []prometheus.Metric {
	host := field(fields, "Master_Host", "Source_Host")
	var out []prometheus.Metric
	for column, raw := range fields {
		value, ok := numericValue(raw)
		if !ok {
			continue
		}
		name := strings.NewReplacer("Replica", "Slave", "Source", "Master").Replace(column)
		desc := prometheus.NewDesc("mysql_slave_status_"+validName(strings.ToLower(name)), "Generic metric from SHOW REPLICA STATUS.", []string{"master_host"}, nil)
		out = append(out, prometheus.MustNewConstMetric(desc, prometheus.UntypedValue, value, host))
	}
	return out
}

// numericValue parses a status value: a number, or ON/OFF and YES/NO.
func numericValue(raw string) (float64, bool) {
	switch strings.ToUpper(raw) {
	case "ON", "YES":
		return 1, true
	case "OFF", "NO":
		return 0, true
	}
	value, err := strconv.ParseFloat(raw, 64)
	return value, err == nil
}

// validName keeps the characters a series name may have.
func validName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, name)
}

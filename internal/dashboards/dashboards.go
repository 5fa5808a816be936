// Package dashboards reads the PromQL queries of dbpilot's Grafana
// dashboards (config/grafana), so tests can run each against a real
// Prometheus.
package dashboards

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Query is one PromQL expression of a dashboard.
type Query struct {
	// Dashboard is the file's name, Where the panel, annotation or
	// variable that holds the query.
	Dashboard, Where string
	Expr             string
}

// dashboard is the part of Grafana's dashboard model that holds queries.
type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Annotations struct {
		List []struct {
			Name string `json:"name"`
			Expr string `json:"expr"`
		} `json:"list"`
	} `json:"annotations"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// labelValues is a variable's label_values(selector, label) query, whose
// selector is PromQL.
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*\w+\)$`)

// Load reads the queries of every dashboard (*.json) in dir, sorted.
func Load(dir string) ([]Query, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no dashboards in %s", dir)
	}
	var queries []Query
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var d dashboard
		if err := json.Unmarshal(data, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		name := filepath.Base(file)
		for _, p := range d.Panels {
			for _, t := range p.Targets {
				queries = append(queries, Query{Dashboard: name, Where: "panel " + p.Title, Expr: t.Expr})
			}
		}
		for _, a := range d.Annotations.List {
			if a.Expr != "" {
				queries = append(queries, Query{Dashboard: name, Where: "annotation " + a.Name, Expr: a.Expr})
			}
		}
		for _, v := range d.Templating.List {
			q, ok := v.Query.(map[string]any)
			if !ok {
				continue
			}
			text, _ := q["query"].(string)
			if m := labelValues.FindStringSubmatch(text); m != nil {
				queries = append(queries, Query{Dashboard: name, Where: "variable " + v.Name, Expr: m[1]})
			}
		}
	}
	sort.SliceStable(queries, func(i, j int) bool { return queries[i].Dashboard < queries[j].Dashboard })
	return queries, nil
}

// Expand replaces the dashboard variables ($name, ${name}) in expr with
// values, as Grafana does before it sends a query.
func Expand(expr string, values map[string]string) string {
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	// Longer names first, so $database is not read as $data + "base".
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, name := range names {
		expr = strings.ReplaceAll(expr, "${"+name+"}", values[name])
		expr = strings.ReplaceAll(expr, "$"+name, values[name])
	}
	return expr
}

package prometheus_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot/autopilot/promsource"
	"github.com/dbpilot/dbpilot/internal/dashboards"
)

// TestAlertsAndDashboardsReadNamedSeries: every series an alert or a
// dashboard reads is either the operator's own (dbpilot_ but not
// dbpilot_instance_), Prometheus' up, or one of the names in
// autopilot/promsource/metrics.go, which tests/instance checks the instance
// program serves. A series renamed in one place only would leave an alert
// that can never fire.
func TestAlertsAndDashboardsReadNamedSeries(t *testing.T) {
	_, alerts := readRules(t)
	var exprs [][2]string
	for name, r := range alerts {
		exprs = append(exprs, [2]string{"alert " + name, r.Expr})
	}
	queries, err := dashboards.Load("../../config/grafana")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		exprs = append(exprs, [2]string{q.Dashboard + ", " + q.Where, q.Expr})
	}
	read := map[string]bool{}
	for _, e := range exprs {
		where, expr := e[0], e[1]
		names := seriesNames(expr)
		if len(names) == 0 {
			t.Errorf("%s reads no series: %s", where, expr)
		}
		for _, name := range names {
			read[name] = true
			operators := strings.HasPrefix(name, "dbpilot_") && !strings.HasPrefix(name, "dbpilot_instance_")
			if !operators && name != "up" && !slices.Contains(promsource.Series, name) {
				t.Errorf("%s reads %s, which autopilot/promsource/metrics.go does not name", where, name)
			}
		}
	}
	for _, name := range promsource.Series {
		if !read[name] {
			t.Logf("%s is read by the auto-pilot only", name)
		}
	}
}

func TestSeriesNames(t *testing.T) {
	got := seriesNames(`max by (namespace, database) ((pg_up or mysql_up) or (up{database!="", job=~"a|b"} * 0)) == 0
		and on (namespace) rate(pg_stat_database_tup_fetched{datname!~"postgres|template0"}[5m] offset 1m) > bool 2e3
		unless predict_linear(dbpilot_instance_data_volume_used_bytes[6h], 6 * 3600) > 0 / sum without (pod) (x:recorded) + histogram_quantile(0.9, rate(dbpilot_reconcile_duration_seconds_bucket[$__rate_interval]))`)
	want := []string{"dbpilot_instance_data_volume_used_bytes", "dbpilot_reconcile_duration_seconds_bucket", "mysql_up", "pg_stat_database_tup_fetched", "pg_up", "up", "x:recorded"}
	if !slices.Equal(got, want) {
		t.Errorf("series %v, want %v", got, want)
	}
}

var (
	// quotedOrMatchers are string literals and label matchers, which name
	// no series.
	quotedOrMatchers = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`|\\{[^{}]*\\}")
	// labelLists are the label lists of grouping and vector matching.
	labelLists = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	// ranges are range selectors and subqueries.
	ranges = regexp.MustCompile(`\[[^\[\]]*\]`)
	// identifiers are what remains: series names, functions (followed by
	// a parenthesis), keywords and numbers.
	identifiers = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?`)
)

// promQLKeywords are PromQL's words that are no series.
var promQLKeywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan", "e"}

// seriesNames returns the series names a PromQL expression reads, sorted,
// once each.
func seriesNames(expr string) []string {
	expr = quotedOrMatchers.ReplaceAllString(expr, " ")
	expr = labelLists.ReplaceAllString(expr, " ")
	expr = ranges.ReplaceAllString(expr, " ")
	var names []string
	for _, m := range identifiers.FindAllStringSubmatchIndex(expr, -1) {
		word := expr[m[0]:m[1]]
		if m[2] >= 0 {
			continue // a function
		}
		if m[0] > 0 && (expr[m[0]-1] >= '0' && expr[m[0]-1] <= '9' || expr[m[0]-1] == '.') {
			continue // a number's exponent or unit
		}
		if slices.Contains(promQLKeywords, strings.ToLower(word)) {
			continue
		}
		if !slices.Contains(names, word) {
			names = append(names, word)
		}
	}
	slices.Sort(names)
	return names
}

package prometheus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/dbpilot/dbpilot/internal/dashboards"
	"github.com/dbpilot/dbpilot/internal/promserver"
)

// TestDashboardQueriesParse sends every query of the Grafana dashboards,
// variables expanded, to a real Prometheus, which refuses one that does not
// parse. (tests/realnode checks that each returns data from real pods.)
func TestDashboardQueriesParse(t *testing.T) {
	queries, err := dashboards.Load("../../config/grafana")
	if err != nil {
		t.Fatal(err)
	}
	server, err := promserver.Start(context.Background(), promserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer server.Stop()
	c, err := promapi.NewClient(promapi.Config{Address: server.URL})
	if err != nil {
		t.Fatal(err)
	}
	api := promv1.NewAPI(c)
	for _, q := range queries {
		expr := dashboards.Expand(q.Expr, map[string]string{"namespace": "shop", "database": "orders", "__rate_interval": "1m"})
		if strings.Contains(expr, "$") {
			t.Errorf("%s, %s: a variable is left: %s", q.Dashboard, q.Where, expr)
			continue
		}
		if _, _, err := api.Query(context.Background(), expr, time.Now()); err != nil {
			t.Errorf("%s, %s: %v\n%s", q.Dashboard, q.Where, err, expr)
		}
	}
	t.Logf("%d dashboard queries parse", len(queries))
}

package controllers

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// TestDegradedSeriesFollowsTheCondition: dbpilot_database_degraded names the
// reason while Degraded is True, moves with the reason, and goes once it is
// False, leaving another Database's series alone.
func TestDegradedSeriesFollowsTheCondition(t *testing.T) {
	orders, billing := types.NamespacedName{Namespace: "shop", Name: "orders"}, types.NamespacedName{Namespace: "shop", Name: "billing"}
	t.Cleanup(func() { forgetDatabaseMetrics(orders); forgetDatabaseMetrics(billing) })
	degraded := func(status metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{
			{Type: dbpilotv1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: dbpilotv1alpha1.ReasonPrimaryReady},
			{Type: dbpilotv1alpha1.ConditionDegraded, Status: status, Reason: reason},
		}
	}

	setDegraded(billing, degraded(metav1.ConditionTrue, dbpilotv1alpha1.ReasonParametersRefused))
	setDegraded(orders, degraded(metav1.ConditionTrue, dbpilotv1alpha1.ReasonUsersRefused))
	expectSeries(t, `
dbpilot_database_degraded{database="billing",namespace="shop",reason="ParametersRefused"} 1
dbpilot_database_degraded{database="orders",namespace="shop",reason="UsersRefused"} 1
`)
	setDegraded(orders, degraded(metav1.ConditionTrue, dbpilotv1alpha1.ReasonReplicasNotReady))
	expectSeries(t, `
dbpilot_database_degraded{database="billing",namespace="shop",reason="ParametersRefused"} 1
dbpilot_database_degraded{database="orders",namespace="shop",reason="ReplicasNotReady"} 1
`)
	setDegraded(orders, degraded(metav1.ConditionFalse, dbpilotv1alpha1.ReasonAsExpected))
	expectSeries(t, `
dbpilot_database_degraded{database="billing",namespace="shop",reason="ParametersRefused"} 1
`)
	setDegraded(billing, nil)
	expectSeries(t, "")
}

// TestUserSeriesCountsEachState: dbpilot_database_users counts the users in
// each state, a state none is in as 0, and is gone for a Database without
// users and for one forgotten.
func TestUserSeriesCountsEachState(t *testing.T) {
	orders := types.NamespacedName{Namespace: "shop", Name: "orders"}
	t.Cleanup(func() { forgetDatabaseMetrics(orders) })

	setUserStates(orders, []dbpilotv1alpha1.UserStatus{
		{Name: "etl", State: dbpilotv1alpha1.UserReady},
		{Name: "reports", State: dbpilotv1alpha1.UserFailed, Message: "refused"},
		{Name: "audit", State: dbpilotv1alpha1.UserReady},
		{Name: "legacy", State: dbpilotv1alpha1.UserLocked},
		{Name: "auditor", State: dbpilotv1alpha1.UserExpired},
	})
	expectUserSeries(t, `
dbpilot_database_users{database="orders",namespace="shop",state="Expired"} 1
dbpilot_database_users{database="orders",namespace="shop",state="Failed"} 1
dbpilot_database_users{database="orders",namespace="shop",state="Locked"} 1
dbpilot_database_users{database="orders",namespace="shop",state="Pending"} 0
dbpilot_database_users{database="orders",namespace="shop",state="Ready"} 2
`)
	setUserStates(orders, []dbpilotv1alpha1.UserStatus{{Name: "etl", State: dbpilotv1alpha1.UserPending}})
	expectUserSeries(t, `
dbpilot_database_users{database="orders",namespace="shop",state="Expired"} 0
dbpilot_database_users{database="orders",namespace="shop",state="Failed"} 0
dbpilot_database_users{database="orders",namespace="shop",state="Locked"} 0
dbpilot_database_users{database="orders",namespace="shop",state="Pending"} 1
dbpilot_database_users{database="orders",namespace="shop",state="Ready"} 0
`)
	setUserStates(orders, nil)
	expectUserSeries(t, "")

	setUserStates(orders, []dbpilotv1alpha1.UserStatus{{Name: "etl", State: dbpilotv1alpha1.UserReady}})
	forgetDatabaseMetrics(orders)
	expectUserSeries(t, "")
}

func expectSeries(t *testing.T, want string) {
	t.Helper()
	expectGathered(t, databaseDegraded, "dbpilot_database_degraded", want)
}

func expectUserSeries(t *testing.T, want string) {
	t.Helper()
	expectGathered(t, databaseUsers, "dbpilot_database_users", want)
}

// expectGathered compares the series a gauge serves with want, in the
// text exposition format without its HELP and TYPE lines.
func expectGathered(t *testing.T, gauge *prometheus.GaugeVec, name, want string) {
	t.Helper()
	text, err := testutil.CollectAndFormat(gauge, expfmt.TypeTextPlain, name)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(string(text), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			got = append(got, line)
		}
	}
	if strings.Join(got, "\n") != strings.TrimSpace(want) {
		t.Errorf("%s serves\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.TrimSpace(want))
	}
}

package controllers

import (
	"testing"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/internal/designation"
)

func TestHibernationMovesThePrimaryToOrdinalZero(t *testing.T) {
	cases := []struct {
		name      string
		hibernate bool
		primary   string
		replicas  int32
		want      string
	}{
		{name: "hibernating with the primary on ordinal 1", hibernate: true, primary: "db-1", replicas: 3, want: "db-0"},
		{name: "hibernating with the primary on ordinal 0", hibernate: true, primary: "db-0", replicas: 3, want: ""},
		{name: "running with the primary on ordinal 1", primary: "db-1", replicas: 3, want: ""},
		{name: "hibernating beats scaling the primary's pod away", hibernate: true, primary: "db-2", replicas: 2, want: "db-0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := testDatabase(tc.replicas)
			db.Spec.Hibernate = tc.hibernate
			s := &scope{db: db, designation: &designation.Designation{Primary: tc.primary, Epoch: 2}}
			target, why, requested := switchoverTarget(s)
			if target != tc.want || requested {
				t.Fatalf("switchoverTarget = %q (%s, requested %v), want %q", target, why, requested, tc.want)
			}
		})
	}
}

func TestHibernationProgress(t *testing.T) {
	cases := []struct {
		hold            string
		pods            int
		reason, message string
	}{
		{"waiting for backup db-1 to finish", 2, dbpilotv1alpha1.ReasonHibernating, "Hibernating, 2 pods left: waiting for backup db-1 to finish"},
		{"", 1, dbpilotv1alpha1.ReasonHibernating, "Hibernating: stopping the pods, replicas first (1 left)"},
		{"", 0, dbpilotv1alpha1.ReasonHibernated, "spec.hibernate is true: no pod runs; the volumes are kept"},
	}
	for _, tc := range cases {
		reason, message := hibernationProgress(tc.hold, tc.pods)
		if reason != tc.reason || message != tc.message {
			t.Errorf("hibernationProgress(%q, %d) = %s %q, want %s %q", tc.hold, tc.pods, reason, message, tc.reason, tc.message)
		}
	}
}

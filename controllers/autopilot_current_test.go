package controllers

import (
	"testing"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

func TestResizesInPlace(t *testing.T) {
	pending := []dbpilotv1alpha1.InstanceStatus{{Name: "orders-0"}, {Name: "orders-1", PendingRestart: []string{"shared_buffers"}}}
	settled := []dbpilotv1alpha1.InstanceStatus{{Name: "orders-0"}, {Name: "orders-1"}}
	cases := []struct {
		name             string
		engine           dbpilotv1alpha1.Engine
		instances        []dbpilotv1alpha1.InstanceStatus
		apiServerResizes bool
		grows, shrinks   bool
	}{
		{"no pods/resize", dbpilotv1alpha1.EngineMariaDB, settled, false, false, false},
		{"MariaDB", dbpilotv1alpha1.EngineMariaDB, settled, true, true, true},
		{"MySQL, pending", dbpilotv1alpha1.EngineMySQL, pending, true, true, true},
		{"PostgreSQL", dbpilotv1alpha1.EnginePostgres, settled, true, true, false},
		// Grown once in place already: the next step up rolls.
		{"PostgreSQL, pending a restart", dbpilotv1alpha1.EnginePostgres, pending, true, false, false},
		{"PostgreSQL, no pods/resize", dbpilotv1alpha1.EnginePostgres, settled, false, false, false},
	}
	for _, c := range cases {
		db := &dbpilotv1alpha1.Database{Spec: dbpilotv1alpha1.DatabaseSpec{Engine: c.engine}}
		db.Status.Instances = c.instances
		if grows, shrinks := resizesInPlace(db, c.apiServerResizes); grows != c.grows || shrinks != c.shrinks {
			t.Errorf("%s: grows %v, shrinks %v; want %v, %v", c.name, grows, shrinks, c.grows, c.shrinks)
		}
	}
}

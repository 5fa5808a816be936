package controllers

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
)

func TestParametersRestartRollsOncePerDigest(t *testing.T) {
	db := testDatabase(2)
	db.Spec.Engine = dbpilotv1alpha1.EnginePostgres
	db.Spec.Parameters = map[string]dbpilotv1alpha1.ParameterValue{"shared_preload_libraries": "pg_stat_statements", "work_mem": "64MB"}
	digest := desired.ParametersDigest(db)
	withStamp := func(stamp string) *appsv1.StatefulSet {
		live := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}}}
		if stamp != "" {
			live.Spec.Template.Annotations[desired.AnnotationParametersRestart] = stamp
		}
		return live
	}
	mariadb, mysql := db.DeepCopy(), db.DeepCopy()
	mariadb.Spec.Engine, mysql.Spec.Engine = dbpilotv1alpha1.EngineMariaDB, dbpilotv1alpha1.EngineMySQL
	mariadb.Spec.Parameters = map[string]dbpilotv1alpha1.ParameterValue{"back_log": "100"}
	withSharedBuffers := db.DeepCopy()
	withSharedBuffers.Spec.Parameters["shared_buffers"] = "512MB"
	pending := func(names ...string) map[string]layout.InstanceStatus {
		return map[string]layout.InstanceStatus{"db-0": {}, "db-1": {PendingRestart: names}}
	}
	for _, tc := range []struct {
		name    string
		db      *dbpilotv1alpha1.Database
		live    *appsv1.StatefulSet
		reports map[string]layout.InstanceStatus
		want    string
	}{
		{"nothing waits: no annotation", db, withStamp(""), pending(), ""},
		{"no StatefulSet yet", db, nil, nil, ""},
		{"a setting of spec.parameters waits", db, withStamp(""), pending("shared_preload_libraries"), digest},
		{"the roll under way keeps the digest", db, withStamp(digest), pending("shared_preload_libraries"), digest},
		{"rolled: the digest stays", db, withStamp(digest), pending(), digest},
		{"a dropped setting waits (reset by the instances)", db, withStamp("former"), pending("max_locks_per_transaction"), digest},
		{"the tier's shared_buffers after an in-place resize: no roll", db, withStamp("former"), pending("shared_buffers", "max_connections"), "former"},
		{"shared_buffers set in spec.parameters", withSharedBuffers, withStamp("former"), pending("shared_buffers"), desired.ParametersDigest(withSharedBuffers)},
		{"MariaDB: any variable of spec.parameters", mariadb, withStamp(""), pending("back_log"), desired.ParametersDigest(mariadb)},
		{"MySQL takes no parameters", mysql, withStamp(""), pending("anything"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parametersRestart(tc.db, tc.live, tc.reports); got != tc.want {
				t.Errorf("annotation %q, want %q", got, tc.want)
			}
		})
	}
}

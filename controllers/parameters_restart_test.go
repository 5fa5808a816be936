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
	mariadb, mysql := db.DeepCopy(), db.DeepCopy()
	mariadb.Spec.Engine, mysql.Spec.Engine = dbpilotv1alpha1.EngineMariaDB, dbpilotv1alpha1.EngineMySQL
	mariadb.Spec.Parameters = map[string]dbpilotv1alpha1.ParameterValue{"back_log": "100"}
	withSharedBuffers := db.DeepCopy()
	withSharedBuffers.Spec.Parameters["shared_buffers"] = "512MB"
	template := func(stamp string) *appsv1.StatefulSet {
		live := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}}}
		if stamp != "" {
			live.Spec.Template.Annotations[desired.AnnotationParametersRestart] = stamp
		}
		return live
	}
	// pods are db-0 and db-1 running the template stamped stamp (db-1's
	// own stamp when given), resized in place from small when resized.
	pods := func(stamp, db1Stamp string, resized bool) []corev1.Pod {
		if db1Stamp == "" {
			db1Stamp = stamp
		}
		var list []corev1.Pod
		for _, pod := range []struct{ name, stamp string }{{"db-0", stamp}, {"db-1", db1Stamp}} {
			annotations := map[string]string{}
			if pod.stamp != "" {
				annotations[desired.AnnotationParametersRestart] = pod.stamp
			}
			if resized {
				annotations[desired.AnnotationStartedTier] = "small"
			}
			list = append(list, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.name, Annotations: annotations}})
		}
		return list
	}
	pending := func(names ...string) map[string]layout.InstanceStatus {
		return map[string]layout.InstanceStatus{"db-0": {}, "db-1": {PendingRestart: names}}
	}
	for _, tc := range []struct {
		name    string
		db      *dbpilotv1alpha1.Database
		live    *appsv1.StatefulSet
		pods    []corev1.Pod
		reports map[string]layout.InstanceStatus
		want    string
	}{
		{"nothing waits: no annotation", db, template(""), pods("", "", false), pending(), ""},
		{"no StatefulSet yet", db, nil, nil, nil, ""},
		{"a setting of spec.parameters waits", db, template(""), pods("", "", false), pending("shared_preload_libraries"), digest},
		{"the roll under way keeps the digest", db, template(digest), pods(digest, "", false), pending("shared_preload_libraries"), digest},
		{"rolled: the digest stays", db, template(digest), pods(digest, "", false), pending(), digest},
		{"a dropped setting waits (reset by the instances)", db, template("former"), pods("former", "", false), pending("max_locks_per_transaction"), digest},
		{"a pod the roll has not restarted yet is left out", db, template("former"), pods("former", "older", false), pending("max_locks_per_transaction"), "former"},
		{"the tier's shared_buffers after an in-place resize: no roll", db, template("former"), pods("former", "", true), pending("shared_buffers", "max_connections"), "former"},
		{"shared_buffers dropped from spec.parameters on a pod not resized", db, template("former"), pods("former", "", false), pending("shared_buffers"), digest},
		{"shared_buffers set in spec.parameters", withSharedBuffers, template("former"), pods("former", "", true), pending("shared_buffers"), desired.ParametersDigest(withSharedBuffers)},
		{"MariaDB: any variable of spec.parameters", mariadb, template(""), pods("", "", false), pending("back_log"), desired.ParametersDigest(mariadb)},
		{"MySQL takes no parameters", mysql, template(""), pods("", "", false), pending("anything"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parametersRestart(tc.db, tc.live, tc.pods, tc.reports); got != tc.want {
				t.Errorf("annotation %q, want %q", got, tc.want)
			}
		})
	}
}

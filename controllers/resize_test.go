package controllers

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/internal/imagecatalog"
)

// applied is the StatefulSet the operator applied for db.
func applied(db *dbpilotv1alpha1.Database) *appsv1.StatefulSet {
	template := desired.PodTemplate(db, imagecatalog.Default(), desired.Restarts{})
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{desired.AnnotationTemplateHash: desired.TemplateHash(template)}},
		Spec:       appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: template.Annotations}}},
	}
}

func TestInPlaceTierChange(t *testing.T) {
	at := func(engine dbpilotv1alpha1.Engine, tier dbpilotv1alpha1.Tier) *dbpilotv1alpha1.Database {
		db := testDatabase(2)
		db.Spec.Engine, db.Spec.Tier = engine, tier
		return db
	}
	small, medium := dbpilotv1alpha1.TierSmall, dbpilotv1alpha1.TierMedium
	for _, tc := range []struct {
		name     string
		live, db *dbpilotv1alpha1.Database
		want     bool
	}{
		{"postgres grows", at(dbpilotv1alpha1.EnginePostgres, small), at(dbpilotv1alpha1.EnginePostgres, medium), true},
		{"postgres shrinks: rolls", at(dbpilotv1alpha1.EnginePostgres, medium), at(dbpilotv1alpha1.EnginePostgres, small), false},
		{"mariadb grows", at(dbpilotv1alpha1.EngineMariaDB, small), at(dbpilotv1alpha1.EngineMariaDB, medium), true},
		{"mariadb shrinks", at(dbpilotv1alpha1.EngineMariaDB, medium), at(dbpilotv1alpha1.EngineMariaDB, small), true},
		{"same tier", at(dbpilotv1alpha1.EngineMariaDB, small), at(dbpilotv1alpha1.EngineMariaDB, small), false},
		{"tier and version: rolls", at(dbpilotv1alpha1.EngineMariaDB, small), func() *dbpilotv1alpha1.Database {
			db := at(dbpilotv1alpha1.EngineMariaDB, medium)
			db.Spec.Version = "11.4.5"
			return db
		}(), false},
		{"tier and backups: rolls", at(dbpilotv1alpha1.EnginePostgres, small), func() *dbpilotv1alpha1.Database {
			db := at(dbpilotv1alpha1.EnginePostgres, medium)
			db.Spec.Backup = &dbpilotv1alpha1.BackupSpec{Schedule: "@daily"}
			return db
		}(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, ok := inPlaceTierChange(tc.db, applied(tc.live), imagecatalog.Default(), desired.Restarts{})
			if ok != tc.want {
				t.Fatalf("in place = %v, want %v", ok, tc.want)
			}
			if ok && from != tc.live.Spec.Tier {
				t.Errorf("from %s, want %s", from, tc.live.Spec.Tier)
			}
		})
	}
	if _, ok := inPlaceTierChange(at(dbpilotv1alpha1.EnginePostgres, medium), applied(at(dbpilotv1alpha1.EnginePostgres, small)), imagecatalog.Default(), desired.Restarts{Parameters: "0123abcd"}); ok {
		t.Error("a tier change with a restart for spec.parameters is resized in place: the restart would never happen")
	}
	if _, ok := inPlaceTierChange(at(dbpilotv1alpha1.EngineMariaDB, medium), applied(at(dbpilotv1alpha1.EngineMariaDB, small)), imagecatalog.Default(), desired.Restarts{Requested: "now"}); ok {
		t.Error("a tier change with a restart on request is resized in place: the restart would never happen")
	}
	if _, ok := inPlaceTierChange(at(dbpilotv1alpha1.EngineMariaDB, medium), nil, imagecatalog.Default(), desired.Restarts{}); ok {
		t.Error("no StatefulSet yet: nothing to resize")
	}
}

func TestRestartMatters(t *testing.T) {
	pod := func(started dbpilotv1alpha1.Tier) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{desired.AnnotationTier: "medium"}}}
		if started != "" {
			p.Annotations[desired.AnnotationStartedTier] = string(started)
		}
		return p
	}
	postgres, mariadb := testDatabase(2), testDatabase(2)
	postgres.Spec.Engine, mariadb.Spec.Engine = dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.EngineMariaDB
	small, medium, large := dbpilotv1alpha1.TierSmall, dbpilotv1alpha1.TierMedium, dbpilotv1alpha1.TierLarge
	for _, tc := range []struct {
		name    string
		db      *dbpilotv1alpha1.Database
		pods    []corev1.Pod
		to      dbpilotv1alpha1.Tier
		started dbpilotv1alpha1.Tier
	}{
		{"never resized: one step", postgres, []corev1.Pod{pod(""), pod("")}, large, ""},
		{"never resized: two steps", postgres, []corev1.Pod{pod(""), pod("")}, dbpilotv1alpha1.TierXLarge, medium},
		{"started one step below", postgres, []corev1.Pod{pod(small), pod("")}, medium, ""},
		{"started two steps below", postgres, []corev1.Pod{pod(""), pod(small)}, large, small},
		{"mariadb follows online", mariadb, []corev1.Pod{pod(small)}, large, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started, matters := restartMatters(tc.db, tc.pods, tc.to)
			if matters != (tc.started != "") || started != tc.started {
				t.Errorf("restartMatters = %s, %v; want %q", started, matters, tc.started)
			}
		})
	}
}

func TestPodResizeState(t *testing.T) {
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	medium := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}
	pod := func(spec, running corev1.ResourceList, conditions ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: desired.DatabaseContainerName,
				Resources: corev1.ResourceRequirements{Requests: spec, Limits: spec}}}},
			Status: corev1.PodStatus{Conditions: conditions, ContainerStatuses: []corev1.ContainerStatus{{Name: desired.DatabaseContainerName,
				Resources: &corev1.ResourceRequirements{Requests: running, Limits: running}}}},
		}
	}
	pending := func(reason string) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: reason}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want resizeState
	}{
		{"old size", pod(small, small), resizeToAsk},
		{"asked, not yet applied", pod(medium, small), resizeUnderway},
		{"deferred", pod(medium, small, pending(corev1.PodReasonDeferred)), resizeUnderway},
		{"in progress", pod(medium, small, corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}), resizeUnderway},
		{"infeasible", pod(medium, small, pending(corev1.PodReasonInfeasible)), resizeInfeasible},
		{"applied", pod(medium, medium), resizeApplied},
		{"equal quantities written differently", pod(medium, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m"), corev1.ResourceMemory: resource.MustParse("2048Mi")}), resizeApplied},
	} {
		if got := podResizeState(tc.pod, medium); got != tc.want {
			t.Errorf("%s: state %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestServesPodResize(t *testing.T) {
	list := &metav1.APIResourceList{APIResources: []metav1.APIResource{{Name: "pods"}, {Name: "pods/status"}}}
	if servesPodResize(list) {
		t.Error("an API server without pods/resize serves it")
	}
	list.APIResources = append(list.APIResources, metav1.APIResource{Name: "pods/resize"})
	if !servesPodResize(list) {
		t.Error("pods/resize not found")
	}
}

func TestReportResources(t *testing.T) {
	reporting := corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
		{Name: desired.InstanceCopyContainerName}, {Name: desired.DatabaseContainerName, Resources: &corev1.ResourceRequirements{}}}}}
	silent := corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: desired.DatabaseContainerName}}}}
	if !reportResources([]corev1.Pod{reporting, reporting}) {
		t.Error("pods whose kubelet reports resources")
	}
	if reportResources([]corev1.Pod{reporting, silent}) || reportResources(nil) {
		t.Error("a pod whose kubelet reports no resources (or no pod) cannot be resized in place")
	}
}

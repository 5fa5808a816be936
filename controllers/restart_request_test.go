package controllers

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

func TestRequestedRestartOutlivesItsAnnotation(t *testing.T) {
	withRestart := func(value string) *appsv1.StatefulSet {
		live := applied(testDatabase(2))
		if value != "" {
			live.Spec.Template.Annotations[dbpilotv1alpha1.AnnotationRestart] = value
		}
		return live
	}
	asking := func(value string) *dbpilotv1alpha1.Database {
		db := testDatabase(2)
		if value != "" {
			db.Annotations = map[string]string{dbpilotv1alpha1.AnnotationRestart: value}
		}
		return db
	}
	for _, tc := range []struct {
		name string
		db   *dbpilotv1alpha1.Database
		live *appsv1.StatefulSet
		want string
	}{
		{"never asked", asking(""), withRestart(""), ""},
		{"no StatefulSet yet", asking("first"), nil, "first"},
		{"asked: the pods restart for it", asking("first"), withRestart(""), "first"},
		{"asked again", asking("second"), withRestart("first"), "second"},
		{"done: nothing more", asking("first"), withRestart("first"), "first"},
		{"annotation removed: restarts nothing", asking(""), withRestart("first"), "first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := requestedRestart(tc.db, tc.live); got != tc.want {
				t.Errorf("requestedRestart = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLiveRestartsReadBothAnnotations(t *testing.T) {
	live := applied(testDatabase(2))
	live.Spec.Template.Annotations[desired.AnnotationParametersRestart] = "0123abcd"
	live.Spec.Template.Annotations[dbpilotv1alpha1.AnnotationRestart] = "now"
	want := desired.Restarts{Parameters: "0123abcd", Requested: "now"}
	if got := liveRestarts(live); got != want {
		t.Errorf("liveRestarts = %+v, want %+v", got, want)
	}
	if got := liveRestarts(nil); got != (desired.Restarts{}) {
		t.Errorf("liveRestarts(nil) = %+v, want none", got)
	}
}

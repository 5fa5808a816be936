package controllers

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

func TestResizeRefusedOnlyForGood(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "db-0", nil), true},
		{"forbidden", apierrors.NewForbidden(pods, "db-0", errors.New("exceeds the node's capacity")), true},
		{"bad request", apierrors.NewBadRequest("too much"), true},
		{"conflict", apierrors.NewConflict(pods, "db-0", errors.New("changed")), false},
		{"timeout", apierrors.NewTimeoutError("slow", 1), false},
		{"outage", apierrors.NewServiceUnavailable("down"), false},
		{"none", nil, false},
	} {
		if got := resizeRefused(tc.err); got != tc.want {
			t.Errorf("%s: refused %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHoldsLonePodOnlyForTheAutopilotsTier(t *testing.T) {
	now := testNow.Time
	autopilot := func(replicas int32, tier dbpilotv1alpha1.Tier) *dbpilotv1alpha1.Database {
		db := testDatabase(replicas)
		db.Spec.Autopilot = &dbpilotv1alpha1.AutopilotSpec{Mode: dbpilotv1alpha1.AutopilotAuto,
			Replicas: &dbpilotv1alpha1.ReplicaBounds{Min: 1, Max: 3},
			Tiers:    &dbpilotv1alpha1.TierBounds{Min: dbpilotv1alpha1.TierSmall, Max: dbpilotv1alpha1.TierXLarge}}
		db.Status.Autopilot = &dbpilotv1alpha1.AutopilotStatus{Recommendation: &dbpilotv1alpha1.AutopilotRecommendation{Replicas: ptr.To(replicas), Tier: tier}}
		return db
	}
	shrinking := autopilot(1, dbpilotv1alpha1.TierSmall)
	shrinking.Spec.Tier = dbpilotv1alpha1.TierMedium
	atMedium := pod("db-0", true, now)
	atMedium.Annotations = map[string]string{desired.AnnotationTier: string(dbpilotv1alpha1.TierMedium)}
	owners := testDatabase(1)
	owners.Spec.Tier = dbpilotv1alpha1.TierLarge
	one := []corev1.Pod{pod("db-0", true, now)}
	leaving := pod("db-1", true, now)
	leaving.DeletionTimestamp = &metav1.Time{Time: now}
	for _, tc := range []struct {
		name string
		db   *dbpilotv1alpha1.Database
		pods []corev1.Pod
		want bool
	}{
		{"the auto-pilot's tier on a lone pod", autopilot(1, dbpilotv1alpha1.TierLarge), one, true},
		{"a pod leaving beside it", autopilot(1, dbpilotv1alpha1.TierLarge), append(one, leaving), true},
		{"the owner's tier", owners, one, false},
		{"a smaller tier refused rolls", shrinking, []corev1.Pod{atMedium}, false},
		{"a bigger tier refused, the pod at medium", autopilot(1, dbpilotv1alpha1.TierLarge), []corev1.Pod{atMedium}, true},
		{"two pods roll, replicas first", autopilot(2, dbpilotv1alpha1.TierLarge), []corev1.Pod{pod("db-0", true, now), pod("db-1", true, now)}, false},
	} {
		if got := holdsLonePod(tc.db, tc.pods); got != tc.want {
			t.Errorf("%s: holds %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestResizesToWithdrawAreThoseOfATierTakenBack(t *testing.T) {
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	xlarge := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	at := func(name, revision string, asks corev1.ResourceList, refused dbpilotv1alpha1.Tier) corev1.Pod {
		p := corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: desired.DatabaseContainerName,
			Resources: corev1.ResourceRequirements{Requests: asks, Limits: asks}}}}}
		p.Name, p.Labels = name, map[string]string{appsv1.ControllerRevisionHashLabelKey: revision}
		if refused != "" {
			p.Annotations = map[string]string{desired.AnnotationResizeRefused: string(refused)}
		}
		return p
	}
	live := sts(1, 1, 1, "small", "small")
	unseen := sts(1, 1, 1, "small", "small")
	unseen.Generation = 2
	leaving := at("db-0", "small", xlarge, "")
	leaving.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for _, tc := range []struct {
		name string
		live *appsv1.StatefulSet
		pod  corev1.Pod
		want bool
	}{
		{"asked xlarge, deferred, taken back", live, at("db-0", "small", xlarge, dbpilotv1alpha1.TierXLarge), true},
		{"refused by the API server, only marked", live, at("db-0", "small", small, dbpilotv1alpha1.TierXLarge), true},
		{"asks what the template has", live, at("db-0", "small", small, ""), false},
		{"another revision: a resize or a roll under way", sts(1, 1, 0, "small", "xlarge"), at("db-0", "small", small, dbpilotv1alpha1.TierXLarge), false},
		{"the controller has not seen the change", unseen, at("db-0", "small", xlarge, ""), false},
		{"leaving", live, leaving, false},
	} {
		got := resizesToWithdraw(tc.live, []corev1.Pod{tc.pod}, small)
		if (len(got) == 1) != tc.want {
			t.Errorf("%s: withdraw %v, want %v", tc.name, len(got) == 1, tc.want)
		}
	}
}

func TestPodsRunTier(t *testing.T) {
	at := func(name string, tier dbpilotv1alpha1.Tier) corev1.Pod {
		p := pod(name, true, testNow.Time)
		p.Annotations = map[string]string{desired.AnnotationTier: string(tier)}
		return p
	}
	small, medium := dbpilotv1alpha1.TierSmall, dbpilotv1alpha1.TierMedium
	leaving := at("db-1", medium)
	leaving.DeletionTimestamp = &metav1.Time{Time: testNow.Time}
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want bool
	}{
		{"every pod at small", []corev1.Pod{at("db-0", small), at("db-1", small)}, true},
		{"one resized to medium already", []corev1.Pod{at("db-0", small), at("db-1", medium)}, false},
		{"a leaving pod does not count", []corev1.Pod{at("db-0", small), leaving}, true},
		{"no pod", nil, false},
	} {
		if got := podsRunTier(tc.pods, small); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

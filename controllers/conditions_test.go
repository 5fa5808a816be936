package controllers

import (
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
)

var testNow = metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))

func testDatabase(replicas int32) *dbpilotv1alpha1.Database {
	db := &dbpilotv1alpha1.Database{Spec: dbpilotv1alpha1.DatabaseSpec{
		Engine: dbpilotv1alpha1.EnginePostgres, Replicas: ptr.To(replicas),
		Storage: &dbpilotv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
	}}
	db.Name, db.Namespace, db.Generation = "db", "ns", 4
	return db
}

func hibernating(db *dbpilotv1alpha1.Database) *dbpilotv1alpha1.Database {
	db.Spec.Hibernate = true
	return db
}

func pod(name string, ready bool, since time.Time) corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
		Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(since),
	}}}}
	p.Name = name
	p.CreationTimestamp = metav1.NewTime(since)
	return p
}

func sts(replicas, ready, updated int32, current, update string) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{Status: appsv1.StatefulSetStatus{
		ObservedGeneration: 1, Replicas: replicas, ReadyReplicas: ready, UpdatedReplicas: updated,
		CurrentRevision: current, UpdateRevision: update,
	}}
	s.Generation = 1
	return s
}

func TestBuildConditions(t *testing.T) {
	recent := testNow.Add(-time.Minute)
	old := testNow.Add(-time.Hour)
	cases := []struct {
		name                                     string
		db                                       *dbpilotv1alpha1.Database
		obs                                      observation
		available, progressing, degraded         metav1.ConditionStatus
		progressingReason, degradedReason, phase string
	}{
		{
			name: "creating", db: testDatabase(1), obs: observation{},
			available: metav1.ConditionFalse, progressing: metav1.ConditionTrue, degraded: metav1.ConditionFalse,
			progressingReason: dbpilotv1alpha1.ReasonCreating, degradedReason: dbpilotv1alpha1.ReasonAsExpected, phase: "Provisioning",
		},
		{
			name: "running", db: testDatabase(2),
			obs:       observation{primary: "db-0", statefulSet: sts(2, 2, 2, "a", "a"), pods: []corev1.Pod{pod("db-0", true, old), pod("db-1", true, old)}},
			available: metav1.ConditionTrue, progressing: metav1.ConditionFalse, degraded: metav1.ConditionFalse,
			progressingReason: dbpilotv1alpha1.ReasonReconciled, degradedReason: dbpilotv1alpha1.ReasonAsExpected, phase: "Running",
		},
		{
			name: "scaling up", db: testDatabase(3),
			obs:       observation{primary: "db-0", statefulSet: sts(2, 2, 2, "a", "a"), pods: []corev1.Pod{pod("db-0", true, old), pod("db-1", true, old)}},
			available: metav1.ConditionTrue, progressing: metav1.ConditionTrue, degraded: metav1.ConditionFalse,
			progressingReason: dbpilotv1alpha1.ReasonScaling, degradedReason: dbpilotv1alpha1.ReasonAsExpected, phase: "Updating",
		},
		{
			// The pass wrote generation 2; the cache still has 1, fully
			// rolled out, which says nothing of the new template.
			name: "a written StatefulSet the cache does not show yet", db: testDatabase(2),
			obs:       observation{primary: "db-0", statefulSet: sts(2, 2, 2, "a", "a"), statefulSetWritten: 2, pods: []corev1.Pod{pod("db-0", true, old), pod("db-1", true, old)}},
			available: metav1.ConditionTrue, progressing: metav1.ConditionTrue, degraded: metav1.ConditionFalse,
			progressingReason: dbpilotv1alpha1.ReasonRollingUpdate, degradedReason: dbpilotv1alpha1.ReasonAsExpected, phase: "Updating",
		},
		{
			name: "the cache shows the written StatefulSet", db: testDatabase(2),
			obs:       observation{primary: "db-0", statefulSet: sts(2, 2, 2, "a", "a"), statefulSetWritten: 1, pods: []corev1.Pod{pod("db-0", true, old), pod("db-1", true, old)}},
			available: metav1.ConditionTrue, progressing: metav1.ConditionFalse, degraded: metav1.ConditionFalse,
			progressingReason: dbpilotv1alpha1.ReasonReconciled, degradedReason: dbpilotv1alpha1.ReasonAsExpected, phase: "Running",
		},
		{
			name: "rolling a tier change", db: testDatabase(3),
			obs:       observation{primary: "db-0", statefulSet: sts(3, 3, 1, "a", "b"), pods: []corev1.Pod{pod("db-0", true, old), pod("db-1", true, old), pod("db-2", true, recent)}},
			available: metav1.ConditionTrue, progressing: metav1.ConditionTrue, degraded: metav1.ConditionFalse,
			progressingReason: dbpilotv1alpha1.ReasonRollingUpdate, degradedReason: dbpilotv1alpha1.ReasonAsExpected, phase: "Updating",
		},
		{
			name: "replica stuck not ready", db: testDatabase(2),
			obs:       observation{primary: "db-0", statefulSet: sts(2, 1, 2, "a", "a"), pods: []corev1.Pod{pod("db-0", true, old), pod("db-1", false, old)}},
			available: metav1.ConditionTrue, progressing: metav1.ConditionTrue, degraded: metav1.ConditionTrue,
			progressingReason: dbpilotv1alpha1.ReasonScaling, degradedReason: dbpilotv1alpha1.ReasonReplicasNotReady, phase: "Degraded",
		},
		{
			name: "replica starting is not degraded", db: testDatabase(2),
			obs:       observation{primary: "db-0", statefulSet: sts(2, 1, 2, "a", "a"), pods: []corev1.Pod{pod("db-0", true, old), pod("db-1", false, recent)}},
			available: metav1.ConditionTrue, progressing: metav1.ConditionTrue, degraded: metav1.ConditionFalse,
			progressingReason: dbpilotv1alpha1.ReasonScaling, degradedReason: dbpilotv1alpha1.ReasonAsExpected, phase: "Updating",
		},
		{
			name: "primary down", db: testDatabase(1),
			obs:       observation{primary: "db-0", statefulSet: sts(1, 0, 1, "a", "a"), pods: []corev1.Pod{pod("db-0", false, old)}},
			available: metav1.ConditionFalse, progressing: metav1.ConditionTrue, degraded: metav1.ConditionTrue,
			progressingReason: dbpilotv1alpha1.ReasonCreating, degradedReason: dbpilotv1alpha1.ReasonReplicasNotReady, phase: "Degraded",
		},
		{
			name: "credentials missing", db: testDatabase(1),
			obs:       observation{credentialsProblem: "Secret x does not exist"},
			available: metav1.ConditionFalse, progressing: metav1.ConditionTrue, degraded: metav1.ConditionTrue,
			progressingReason: dbpilotv1alpha1.ReasonCreating, degradedReason: dbpilotv1alpha1.ReasonCredentialsInvalid, phase: "Failed",
		},
		{
			name: "server certificate unusable", db: testDatabase(1),
			obs: observation{primary: "db-0", statefulSet: sts(1, 1, 1, "a", "a"), pods: []corev1.Pod{pod("db-0", true, old)},
				tlsProblem: "spec.tls.serverCertificateSecretName: Secret x lacks the keys ca.crt", reconcileErr: errors.New("x"), degradingErr: errors.New("x")},
			available: metav1.ConditionTrue, progressing: metav1.ConditionFalse, degraded: metav1.ConditionTrue,
			progressingReason: dbpilotv1alpha1.ReasonReconciled, degradedReason: dbpilotv1alpha1.ReasonServerCertificateInvalid, phase: "Degraded",
		},
		{
			name: "parameters refused by a server", db: testDatabase(2),
			obs: observation{primary: "db-0", statefulSet: sts(2, 2, 2, "a", "a"), pods: []corev1.Pod{pod("db-0", true, old), pod("db-1", true, old)},
				instances: map[string]layout.InstanceStatus{"db-0": {Role: layout.RolePrimary}, "db-1": {Role: layout.RoleReplica, ParametersError: `invalid value for parameter "work_mem": "lots"`}}},
			available: metav1.ConditionTrue, progressing: metav1.ConditionFalse, degraded: metav1.ConditionTrue,
			progressingReason: dbpilotv1alpha1.ReasonReconciled, degradedReason: dbpilotv1alpha1.ReasonParametersRefused, phase: "Degraded",
		},
		{
			name: "priority class missing", db: testDatabase(2),
			obs: observation{primary: "db-0", statefulSet: sts(2, 2, 2, "a", "a"), pods: []corev1.Pod{pod("db-0", true, old), pod("db-1", true, old)},
				schedulingProblem: "spec.scheduling.priorityClassName: PriorityClass databases does not exist"},
			available: metav1.ConditionTrue, progressing: metav1.ConditionFalse, degraded: metav1.ConditionTrue,
			progressingReason: dbpilotv1alpha1.ReasonReconciled, degradedReason: dbpilotv1alpha1.ReasonSchedulingInvalid, phase: "Degraded",
		},
		{
			name: "client certificate authority unusable", db: testDatabase(1),
			obs: observation{primary: "db-0", statefulSet: sts(1, 1, 1, "a", "a"), pods: []corev1.Pod{pod("db-0", true, old)},
				clientCertificateProblem: "the client certificate authority in Secret x-client-ca cannot sign"},
			available: metav1.ConditionTrue, progressing: metav1.ConditionFalse, degraded: metav1.ConditionTrue,
			progressingReason: dbpilotv1alpha1.ReasonReconciled, degradedReason: dbpilotv1alpha1.ReasonClientCertificateInvalid, phase: "Degraded",
		},
		{
			name: "hibernating while the primary moves to ordinal 0", db: hibernating(testDatabase(2)),
			obs: observation{primary: "db-1", statefulSet: sts(2, 2, 2, "a", "a"), pods: []corev1.Pod{pod("db-0", true, old), pod("db-1", true, old)},
				hibernationHold: "waiting for the primary db-1 to move to db-0"},
			available: metav1.ConditionTrue, progressing: metav1.ConditionTrue, degraded: metav1.ConditionFalse,
			progressingReason: dbpilotv1alpha1.ReasonHibernating, degradedReason: dbpilotv1alpha1.ReasonAsExpected, phase: "Hibernating",
		},
		{
			name: "hibernating, the primary still stopping", db: hibernating(testDatabase(3)),
			obs:       observation{primary: "db-0", statefulSet: sts(1, 1, 1, "a", "a"), pods: []corev1.Pod{pod("db-0", true, old)}},
			available: metav1.ConditionTrue, progressing: metav1.ConditionTrue, degraded: metav1.ConditionFalse,
			progressingReason: dbpilotv1alpha1.ReasonHibernating, degradedReason: dbpilotv1alpha1.ReasonAsExpected, phase: "Hibernating",
		},
		{
			name: "hibernated", db: hibernating(testDatabase(3)),
			obs:       observation{primary: "db-0", statefulSet: sts(0, 0, 0, "a", "a")},
			available: metav1.ConditionFalse, progressing: metav1.ConditionFalse, degraded: metav1.ConditionFalse,
			progressingReason: dbpilotv1alpha1.ReasonHibernated, degradedReason: dbpilotv1alpha1.ReasonAsExpected, phase: "Hibernated",
		},
		{
			name: "resuming", db: testDatabase(3),
			obs:       observation{primary: "db-0", statefulSet: sts(1, 0, 1, "a", "a"), pods: []corev1.Pod{pod("db-0", false, recent)}},
			available: metav1.ConditionFalse, progressing: metav1.ConditionTrue, degraded: metav1.ConditionFalse,
			progressingReason: dbpilotv1alpha1.ReasonCreating, degradedReason: dbpilotv1alpha1.ReasonAsExpected, phase: "Provisioning",
		},
		{
			name: "reconcile error", db: testDatabase(1),
			obs:       observation{primary: "db-0", statefulSet: sts(1, 1, 1, "a", "a"), pods: []corev1.Pod{pod("db-0", true, old)}, reconcileErr: errors.New("applying Service: timeout"), degradingErr: errors.New("applying Service: timeout")},
			available: metav1.ConditionTrue, progressing: metav1.ConditionFalse, degraded: metav1.ConditionTrue,
			progressingReason: dbpilotv1alpha1.ReasonReconciled, degradedReason: dbpilotv1alpha1.ReasonReconcileFailed, phase: "Degraded",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conditions := buildConditions(tc.db, tc.obs, nil, testNow)
			check := func(condType string, want metav1.ConditionStatus, reason string) {
				cond := meta.FindStatusCondition(conditions, condType)
				if cond == nil {
					t.Fatalf("%s missing", condType)
				}
				if cond.Status != want || (reason != "" && cond.Reason != reason) {
					t.Errorf("%s = %s/%s (%s), want %s/%s", condType, cond.Status, cond.Reason, cond.Message, want, reason)
				}
				if cond.ObservedGeneration != tc.db.Generation {
					t.Errorf("%s observedGeneration = %d, want %d", condType, cond.ObservedGeneration, tc.db.Generation)
				}
			}
			check(dbpilotv1alpha1.ConditionAvailable, tc.available, "")
			check(dbpilotv1alpha1.ConditionProgressing, tc.progressing, tc.progressingReason)
			check(dbpilotv1alpha1.ConditionDegraded, tc.degraded, tc.degradedReason)
			if got := phaseOf(tc.db, conditions); string(got) != tc.phase {
				t.Errorf("phase = %s, want %s", got, tc.phase)
			}
		})
	}
}

func TestBuildConditionsKeepsTransitionTimes(t *testing.T) {
	db := testDatabase(1)
	obs := observation{primary: "db-0", statefulSet: sts(1, 1, 1, "a", "a"), pods: []corev1.Pod{pod("db-0", true, testNow.Add(-time.Hour))}}
	first := buildConditions(db, obs, nil, testNow)
	later := metav1.NewTime(testNow.Add(time.Hour))
	second := buildConditions(db, obs, first, later)
	for _, cond := range second {
		if !cond.LastTransitionTime.Equal(&testNow) {
			t.Errorf("%s moved its lastTransitionTime without a change of status", cond.Type)
		}
	}
}

func TestMissingKeysProblemNamesKeysNotValues(t *testing.T) {
	secret := &corev1.Secret{Data: map[string][]byte{"username": []byte("app"), "password": []byte("hunter2-value")}}
	secret.Name = "creds"
	got := missingKeysProblem(secret, desired.CredentialKeys)
	if got != "Secret creds lacks the keys superuser-password" {
		t.Errorf("problem = %q", got)
	}
	secret.Data["superuser-password"] = []byte("x")
	if got := missingKeysProblem(secret, desired.CredentialKeys); got != "" {
		t.Errorf("complete Secret reported as %q", got)
	}
}

func TestGeneratedPasswordsAreLongAndDistinct(t *testing.T) {
	creds, err := generateCredentials()
	if err != nil {
		t.Fatal(err)
	}
	if len(creds.Password) < 32 || len(creds.SuperuserPassword) < 32 || creds.Password == creds.SuperuserPassword {
		t.Errorf("weak or repeated passwords: %d and %d characters", len(creds.Password), len(creds.SuperuserPassword))
	}
}

func TestParametersRefusalNamesThePodAndTheServersWords(t *testing.T) {
	reports := map[string]layout.InstanceStatus{
		"db-2": {ParametersError: `unrecognized configuration parameter "wrok_mem"`},
		"db-0": {},
		"db-1": {ParametersError: `unrecognized configuration parameter "wrok_mem"`},
	}
	want := `spec.parameters: the server of db-1 refuses them, so its settings stay as they were: unrecognized configuration parameter "wrok_mem"`
	if got := parametersRefusal(reports); got != want {
		t.Errorf("refusal %q, want %q", got, want)
	}
	if got := parametersRefusal(map[string]layout.InstanceStatus{"db-0": {}}); got != "" {
		t.Errorf("nothing refused, yet %q", got)
	}
}

// unschedulable is a pod the scheduler has tried and failed to place since
// since, in its words.
func unschedulable(name string, since time.Time, why string) corev1.Pod {
	p := pod(name, false, since)
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: why,
		LastTransitionTime: metav1.NewTime(since),
	})
	return p
}

func TestConditionsSayWhyAPodIsNotScheduled(t *testing.T) {
	why := "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
	// A pod that the scheduler has not yet tried is only starting.
	pending := pod("db-3", false, testNow.Add(-time.Minute))
	pending.Status.Conditions = append(pending.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse})
	obs := observation{primary: "db-0", statefulSet: sts(4, 2, 4, "a", "a"), pods: []corev1.Pod{
		pod("db-0", true, testNow.Add(-time.Hour)), pod("db-1", true, testNow.Add(-time.Hour)),
		unschedulable("db-2", testNow.Add(-time.Minute), why), pending,
	}}
	conditions := buildConditions(testDatabase(4), obs, nil, testNow)
	progressing := meta.FindStatusCondition(conditions, dbpilotv1alpha1.ConditionProgressing)
	if want := "the scheduler cannot place db-2: " + why; !strings.Contains(progressing.Message, want) {
		t.Errorf("Progressing says %q, want it to hold %q", progressing.Message, want)
	}
	if strings.Contains(progressing.Message, "db-3") {
		t.Errorf("Progressing says %q: db-3 was not refused by the scheduler", progressing.Message)
	}
	if degraded := meta.FindStatusCondition(conditions, dbpilotv1alpha1.ConditionDegraded); degraded.Status != metav1.ConditionFalse {
		t.Errorf("a pod the scheduler refused a minute ago degrades the Database: %s", degraded.Message)
	}

	// Refused for longer than notReadyTooLong, the Database is Degraded,
	// and says why.
	obs.pods[2] = unschedulable("db-2", testNow.Add(-time.Hour), why)
	conditions = buildConditions(testDatabase(4), obs, nil, testNow)
	degraded := meta.FindStatusCondition(conditions, dbpilotv1alpha1.ConditionDegraded)
	if degraded.Reason != dbpilotv1alpha1.ReasonReplicasNotReady || !strings.Contains(degraded.Message, "db-2: "+why) {
		t.Errorf("Degraded = %s: %q, want %s naming db-2 and the scheduler's words", degraded.Reason, degraded.Message, dbpilotv1alpha1.ReasonReplicasNotReady)
	}
}

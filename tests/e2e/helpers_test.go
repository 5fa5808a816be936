package e2e_test

import (
	"context"
	eventsv1 "k8s.io/api/events/v1"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

const (
	convergeTimeout = 2 * time.Minute
	pollInterval    = 250 * time.Millisecond
)

// newDatabase is a Database with the given engine, one pod and 1Gi volumes.
func newDatabase(namespace, name string, engine dbpilotv1alpha1.Engine) *dbpilotv1alpha1.Database {
	return &dbpilotv1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: dbpilotv1alpha1.DatabaseSpec{
			Engine:   engine,
			Replicas: ptr.To[int32](1),
			Storage:  &dbpilotv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
		},
	}
}

// fetch reads the latest version of obj.
func fetch(g Gomega, obj client.Object) {
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
}

// update re-reads db, applies change and updates it, retrying on conflicts.
func update(g Gomega, db *dbpilotv1alpha1.Database, change func(*dbpilotv1alpha1.Database)) {
	g.Eventually(func() error {
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(db), db); err != nil {
			return err
		}
		change(db)
		return k8sClient.Update(context.Background(), db)
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

// waitConverged waits until the Database is Available, not Progressing,
// observed at its generation, with every pod ready.
func waitConverged(g Gomega, db *dbpilotv1alpha1.Database) {
	waitConvergedWithin(g, db, convergeTimeout)
}

// waitConvergedWithin is waitConverged with another timeout.
func waitConvergedWithin(g Gomega, db *dbpilotv1alpha1.Database, timeout time.Duration) {
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(db.Status.ObservedGeneration).To(Equal(db.Generation), "observedGeneration")
		g.Expect(meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionAvailable)).To(BeTrue(), "Available: %+v", db.Status.Conditions)
		g.Expect(meta.IsStatusConditionFalse(db.Status.Conditions, dbpilotv1alpha1.ConditionProgressing)).To(BeTrue(), "Progressing: %+v", db.Status.Conditions)
		g.Expect(db.Status.ReadyReplicas).To(Equal(db.EffectiveReplicas()))
		g.Expect(db.Status.Phase).To(Equal(dbpilotv1alpha1.PhaseRunning))
	}, timeout, pollInterval).Should(Succeed(), "Database %s", db.Name)
}

// convergedPerEngine creates a two-pod Database of each engine, named
// after it, and waits until they have converged.
func convergedPerEngine(g Gomega, ns string) []*dbpilotv1alpha1.Database {
	var dbs []*dbpilotv1alpha1.Database
	for _, engine := range []dbpilotv1alpha1.Engine{dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.EngineMySQL, dbpilotv1alpha1.EngineMariaDB} {
		db := newDatabase(ns, string(engine), engine)
		db.Spec.Replicas = ptr.To[int32](2)
		g.Expect(k8sClient.Create(context.Background(), db)).To(Succeed())
		dbs = append(dbs, db)
	}
	for _, db := range dbs {
		waitConverged(g, db)
	}
	return dbs
}

// statefulSetOf reads the Database's StatefulSet.
func statefulSetOf(g Gomega, db *dbpilotv1alpha1.Database) *appsv1.StatefulSet {
	sts := &appsv1.StatefulSet{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: db.Namespace, Name: db.StatefulSetName()}, sts)).To(Succeed())
	return sts
}

// podsOf lists the Database's pods.
func podsOf(g Gomega, db *dbpilotv1alpha1.Database) []corev1.Pod {
	pods := &corev1.PodList{}
	g.Expect(k8sClient.List(context.Background(), pods, client.InNamespace(db.Namespace), client.MatchingLabels(db.SelectorLabels()))).To(Succeed())
	return pods.Items
}

// podUIDs maps the Database's pods, by name, to their UIDs: a pod
// recreated under the same name has another.
func podUIDs(g Gomega, db *dbpilotv1alpha1.Database) map[string]string {
	uids := map[string]string{}
	for _, pod := range podsOf(g, db) {
		uids[pod.Name] = string(pod.UID)
	}
	return uids
}

// claimNames lists the names of the Database's PersistentVolumeClaims.
func claimNames(g Gomega, db *dbpilotv1alpha1.Database) []string {
	claims := &corev1.PersistentVolumeClaimList{}
	g.Expect(k8sClient.List(context.Background(), claims, client.InNamespace(db.Namespace), client.MatchingLabels(db.SelectorLabels()))).To(Succeed())
	var names []string
	for _, claim := range claims.Items {
		names = append(names, claim.Name)
	}
	return names
}

// claimName is the PVC of the pod with the given ordinal.
func claimName(db *dbpilotv1alpha1.Database, ordinal int) string {
	return db.ClaimName(ordinal)
}

// eventReasons lists the reasons of the Events recorded on the Database.
func eventReasons(g Gomega, db *dbpilotv1alpha1.Database) []string {
	var reasons []string
	for _, event := range databaseEvents(g, db) {
		reasons = append(reasons, event.Reason)
	}
	return reasons
}

// eventNotes lists the messages of the Events recorded on the Database.
func eventNotes(g Gomega, db *dbpilotv1alpha1.Database) []string {
	var notes []string
	for _, event := range databaseEvents(g, db) {
		notes = append(notes, event.Note)
	}
	return notes
}

func databaseEvents(g Gomega, db *dbpilotv1alpha1.Database) []eventsv1.Event {
	events, err := clientset.EventsV1().Events(db.Namespace).List(context.Background(), metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	var mine []eventsv1.Event
	for _, event := range events.Items {
		if event.Regarding.Name == db.Name && event.Regarding.Kind == "Database" {
			mine = append(mine, event)
		}
	}
	return mine
}

// findCondition returns the Database's condition of the given type, or nil.
func findCondition(db *dbpilotv1alpha1.Database, condType string) *metav1.Condition {
	return meta.FindStatusCondition(db.Status.Conditions, condType)
}

type (
	appsStatefulSet     = appsv1.StatefulSet
	appsStatefulSetList = appsv1.StatefulSetList
	policyPDBList       = policyv1.PodDisruptionBudgetList
)

// metaItems returns the items of a list as metav1.Object.
func metaItems(list client.ObjectList) ([]metav1.Object, error) {
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	items := make([]metav1.Object, 0, len(objs))
	for _, obj := range objs {
		accessor, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		items = append(items, accessor)
	}
	return items, nil
}

// keyOf is the object's namespace and name.
func keyOf(obj client.Object) client.ObjectKey { return client.ObjectKeyFromObject(obj) }

// isNotFound reports whether err says the object does not exist.
func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

package e2e_test

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// watchVersions records every version of db the API server sends from now
// on; the returned func stops the watch and returns them in order. A watch
// sees each write, where polling can miss a version that lived for
// milliseconds.
func watchVersions(t *testing.T, g Gomega, db *dbpilotv1alpha1.Database) func() []dbpilotv1alpha1.Database {
	t.Helper()
	stop := watchNamed[*dbpilotv1alpha1.Database](t, g, &dbpilotv1alpha1.DatabaseList{}, db.Namespace, db.Name)
	return func() []dbpilotv1alpha1.Database {
		var versions []dbpilotv1alpha1.Database
		for _, v := range stop() {
			versions = append(versions, *v)
		}
		return versions
	}
}

// watchNamed records every version of the object of list's kind named name
// in namespace that the API server sends from now on (the one there is
// first); the returned func stops the watch and returns them in order.
func watchNamed[T client.Object](t *testing.T, g Gomega, list client.ObjectList, namespace, name string) func() []T {
	t.Helper()
	c, err := client.NewWithWatch(restConfig, client.Options{Scheme: k8sClient.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.Watch(ctx, list, client.InNamespace(namespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)})
	if err != nil {
		cancel()
	}
	g.Expect(err).NotTo(HaveOccurred())
	var versions []T
	done := make(chan struct{})
	go func() {
		defer close(done)
		for event := range w.ResultChan() {
			if got, ok := event.Object.(T); ok && event.Type != watch.Error {
				versions = append(versions, got.DeepCopyObject().(T))
			}
		}
	}()
	// versions is read only once the goroutine has ended.
	stop := sync.OnceValue(func() []T {
		w.Stop()
		cancel()
		<-done
		return versions
	})
	t.Cleanup(func() { stop() })
	return stop
}

// claimsConverged reports whether a version's status says the operator has
// finished with its spec: observed at its generation and not Progressing.
func claimsConverged(db *dbpilotv1alpha1.Database) bool {
	progressing := meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionProgressing)
	return db.Status.ObservedGeneration == db.Generation && progressing != nil &&
		progressing.Status == metav1.ConditionFalse && progressing.ObservedGeneration == db.Generation
}

// expectNoEarlyClaim fails on any version, from generation changed on,
// whose status claims convergence while it reports a tier other than want:
// the change claimed done before the primary ran it.
func expectNoEarlyClaim(g Gomega, versions []dbpilotv1alpha1.Database, changed int64, want dbpilotv1alpha1.Tier) {
	for _, v := range versions {
		if v.Generation >= changed && claimsConverged(&v) {
			g.Expect(v.Status.Tier).To(Equal(want), "status at resourceVersion %s claimed generation %d done", v.ResourceVersion, v.Generation)
		}
	}
}

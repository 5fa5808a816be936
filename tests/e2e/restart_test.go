package e2e_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// TestRestartOnRequestRollsThePrimaryLast asks a three-pod Database for a
// restart by annotation: every pod is recreated, the replicas before the
// primary, which the StatefulSet's partition holds back; removing the
// annotation afterwards restarts nothing.
func TestRestartOnRequestRollsThePrimaryLast(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "restart")
	startOperator(t, ns)

	db := newDatabase(ns, "journal", dbpilotv1alpha1.EnginePostgres)
	db.Spec.Replicas = ptr.To[int32](3)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	before := podUIDs(g, db)
	// kwok runs no instance program, so the primary dbpilot designates at
	// ordinal 0 stays there: no replica reports it can take over.
	primary := db.PodName(0)

	statefulSets := watchNamed[*appsStatefulSet](t, g, &appsStatefulSetList{}, ns, db.StatefulSetName())
	const asked = "2026-11-28T05:00:00Z"
	update(g, db, func(db *dbpilotv1alpha1.Database) {
		if db.Annotations == nil {
			db.Annotations = map[string]string{}
		}
		db.Annotations[dbpilotv1alpha1.AnnotationRestart] = asked
	})

	// The replicas restart first; the primary's pod is recreated only
	// once both run the template that asks for the restart.
	g.Eventually(func(g Gomega) {
		pods := podsOf(g, db)
		for _, pod := range pods {
			if pod.Name != primary || string(pod.UID) == before[primary] {
				continue
			}
			for _, other := range pods {
				if other.Name != primary {
					g.Expect(other.Annotations[dbpilotv1alpha1.AnnotationRestart]).To(Equal(asked), "replica %s restarted before the primary", other.Name)
				}
			}
		}
		g.Expect(pods).To(HaveLen(3))
		for _, pod := range pods {
			g.Expect(string(pod.UID)).NotTo(Equal(before[pod.Name]), "pod %s restarted", pod.Name)
			g.Expect(pod.Annotations[dbpilotv1alpha1.AnnotationRestart]).To(Equal(asked))
		}
	}, convergeTimeout, 50*time.Millisecond).Should(Succeed())
	g.Expect(statefulSets()).To(ContainElement(WithTransform(func(sts *appsStatefulSet) bool {
		p := sts.Spec.UpdateStrategy.RollingUpdate.Partition
		return p != nil && *p == 1 && sts.Spec.Template.Annotations[dbpilotv1alpha1.AnnotationRestart] == asked
	}, BeTrue())), "the restart held the primary back with partition 1")
	waitConverged(g, db)
	g.Expect(eventReasons(g, db)).To(ContainElement(dbpilotv1alpha1.EventReasonRestarting))
	g.Expect(*statefulSetOf(g, db).Spec.UpdateStrategy.RollingUpdate.Partition).To(BeZero(), "partition back to 0")

	// Removing the annotation restarts nothing. A change that reaches no
	// pod goes with it, so the Database's observed generation says when
	// the operator has seen both.
	restarted := podUIDs(g, db)
	hash := statefulSetOf(g, db).Annotations[desired.AnnotationTemplateHash]
	update(g, db, func(db *dbpilotv1alpha1.Database) {
		delete(db.Annotations, dbpilotv1alpha1.AnnotationRestart)
		db.Spec.Expose = &dbpilotv1alpha1.ExposeSpec{ReadOnly: &dbpilotv1alpha1.ExposedService{Type: "NodePort"}}
	})
	waitConverged(g, db)
	sts := statefulSetOf(g, db)
	g.Expect(sts.Annotations[desired.AnnotationTemplateHash]).To(Equal(hash), "removing the annotation changed the pod template")
	g.Expect(sts.Spec.Template.Annotations[dbpilotv1alpha1.AnnotationRestart]).To(Equal(asked))
	for _, pod := range podsOf(g, db) {
		g.Expect(string(pod.UID)).To(Equal(restarted[pod.Name]), "pod %s restarted again", pod.Name)
	}
}

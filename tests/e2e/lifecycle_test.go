package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// TestCreateBecomesAvailable creates a PostgreSQL Database in a namespace that
// enforces PodSecurity restricted and checks every child and the status.
func TestCreateBecomesAvailable(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "create")
	startOperator(t, ns)

	db := newDatabase(ns, "orders", dbpilotv1alpha1.EnginePostgres)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)

	g.Expect(db.Finalizers).To(ContainElement(dbpilotv1alpha1.Finalizer))
	g.Expect(db.Status.Tier).To(Equal(dbpilotv1alpha1.TierSmall))
	g.Expect(db.Status.Version).To(Equal("16"))
	g.Expect(db.Status.Ready).To(Equal("1/1"))
	g.Expect(db.Status.Selector).To(Equal("dbpilot.io/database=orders"))
	g.Expect(db.Status.CredentialsSecret).To(Equal("orders-credentials"))
	g.Expect(db.Status.Endpoints).To(Equal(&dbpilotv1alpha1.Endpoints{
		ReadWrite: "orders-rw.create.svc:5432", ReadOnly: "orders-ro.create.svc:5432",
	}))

	secret := &corev1.Secret{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders-credentials"}, secret)).To(Succeed())
	for _, key := range desired.CredentialKeys {
		g.Expect(secret.Data).To(HaveKey(key))
	}
	g.Expect(len(secret.Data[desired.SecretKeyPassword])).To(BeNumerically(">=", 32))
	g.Expect(secret.Data[desired.SecretKeyPassword]).NotTo(Equal(secret.Data[desired.SecretKeySuperuserPassword]))
	for _, cond := range db.Status.Conditions {
		g.Expect(cond.Message).NotTo(ContainSubstring(string(secret.Data[desired.SecretKeyPassword])), "no secret in status")
	}

	cm := &corev1.ConfigMap{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders-config"}, cm)).To(Succeed())
	g.Expect(cm.Data[desired.PostgresConfigFile]).To(ContainSubstring("shared_buffers = 256MB"))

	for name, role := range map[string]string{"orders-rw": dbpilotv1alpha1.RolePrimary, "orders-ro": dbpilotv1alpha1.RolePrimary} {
		svc := &corev1.Service{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc)).To(Succeed())
		g.Expect(svc.Spec.Selector).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRole, role), "service %s", name)
	}
	headless := &corev1.Service{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders-headless"}, headless)).To(Succeed())
	g.Expect(headless.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))

	sts := statefulSetOf(g, db)
	container := sts.Spec.Template.Spec.Containers[0]
	g.Expect(container.Image).To(Equal("docker.io/library/postgres:16"))
	g.Expect(container.Resources.Limits.Cpu().String()).To(Equal("500m"))
	g.Expect(container.Resources.Limits.Memory().String()).To(Equal("1Gi"))
	g.Expect(sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled).To(BeEquivalentTo("Retain"))
	g.Expect(sts.OwnerReferences).To(HaveLen(1))

	pods := podsOf(g, db)
	g.Expect(pods).To(HaveLen(1))
	g.Expect(pods[0].Labels).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRole, dbpilotv1alpha1.RolePrimary))
	claim := &corev1.PersistentVolumeClaim{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: claimName(db, 0)}, claim)).To(Succeed())
	g.Expect(claim.Status.Phase).To(Equal(corev1.ClaimBound))

	// No PodDisruptionBudget with a single pod: it would block node drains.
	pdb := &policyv1.PodDisruptionBudget{}
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, pdb)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no PDB for one pod, got %v", err)
}

// TestScaleUpAndDownKeepsVolumes scales 1 -> 3 -> 1 and checks the Services,
// the PodDisruptionBudget, and that scaling down keeps every volume.
func TestScaleUpAndDownKeepsVolumes(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "scale")
	startOperator(t, ns)

	db := newDatabase(ns, "inventory", dbpilotv1alpha1.EngineMariaDB)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)

	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Replicas = ptr.To[int32](3) })
	waitConverged(g, db)
	g.Expect(db.Status.Ready).To(Equal("3/3"))
	roles := map[string]string{}
	for _, pod := range podsOf(g, db) {
		roles[pod.Name] = pod.Labels[dbpilotv1alpha1.LabelRole]
	}
	g.Expect(roles).To(Equal(map[string]string{"inventory-0": "primary", "inventory-1": "replica", "inventory-2": "replica"}))
	ro := &corev1.Service{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "inventory-ro"}, ro)).To(Succeed())
	g.Expect(ro.Spec.Selector).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRole, dbpilotv1alpha1.RoleReplica))
	// The replicas' budget keeps one of the two; the primary's keeps it.
	pdb := &policyv1.PodDisruptionBudget{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "inventory"}, pdb)).To(Succeed())
	g.Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(1))
	g.Expect(pdb.Spec.Selector.MatchLabels).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRole, dbpilotv1alpha1.RoleReplica))
	primaryBudget := &policyv1.PodDisruptionBudget{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.PrimaryPodDisruptionBudgetName()}, primaryBudget)).To(Succeed())
	g.Expect(primaryBudget.Spec.MinAvailable.IntValue()).To(Equal(1))
	g.Expect(primaryBudget.Spec.Selector.MatchLabels).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRole, dbpilotv1alpha1.RolePrimary))
	g.Eventually(func(g Gomega) {
		g.Expect(eventReasons(g, db)).To(ContainElement(dbpilotv1alpha1.EventReasonScaled))
	}, 30*time.Second, pollInterval).Should(Succeed())

	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Replicas = ptr.To[int32](1) })
	waitConverged(g, db)
	g.Eventually(func(g Gomega) { g.Expect(podsOf(g, db)).To(HaveLen(1)) }, convergeTimeout, pollInterval).Should(Succeed())
	g.Expect(claimNames(g, db)).To(ConsistOf(claimName(db, 0), claimName(db, 1), claimName(db, 2)), "scaling down keeps volumes")
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "inventory"}, pdb))
	}, convergeTimeout, pollInterval).Should(BeTrue(), "PDB removed at one pod")
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.PrimaryPodDisruptionBudgetName()}, primaryBudget))
	}, convergeTimeout, pollInterval).Should(BeTrue(), "the primary's PDB removed at one pod")
}

// TestTierChangeRollsReplicasFirst moves a 3-pod Database from small to large
// and checks resources, tuned configuration, and that the primary restarts
// only after both replicas run the new tier.
func TestTierChangeRollsReplicasFirst(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "tier")
	startOperator(t, ns)

	db := newDatabase(ns, "ledger", dbpilotv1alpha1.EnginePostgres)
	db.Spec.Replicas = ptr.To[int32](3)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	before := podUIDs(g, db)

	versions := watchVersions(t, g, db)
	statefulSets := watchNamed[*appsStatefulSet](t, g, &appsStatefulSetList{}, ns, db.StatefulSetName())
	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Tier = dbpilotv1alpha1.TierLarge })
	changed := db.Generation

	// While the replicas roll, the primary keeps its old pod.
	g.Eventually(func(g Gomega) {
		for _, pod := range podsOf(g, db) {
			if pod.Name == "ledger-0" && string(pod.UID) != before["ledger-0"] {
				// The primary was replaced: both replicas must already be large.
				for _, other := range podsOf(g, db) {
					if other.Name != "ledger-0" {
						g.Expect(other.Annotations[desired.AnnotationTier]).To(Equal("large"), "replica %s rolled before the primary", other.Name)
					}
				}
			}
		}
		fetch(g, db)
		g.Expect(db.Status.Tier).To(Equal(dbpilotv1alpha1.TierLarge))
	}, convergeTimeout, 50*time.Millisecond).Should(Succeed())
	g.Expect(statefulSets()).To(ContainElement(WithTransform(func(sts *appsStatefulSet) bool {
		p := sts.Spec.UpdateStrategy.RollingUpdate.Partition
		return p != nil && *p == 1 && sts.Spec.Template.Annotations[desired.AnnotationTier] == string(dbpilotv1alpha1.TierLarge)
	}, BeTrue())), "the rollout held the primary back with partition 1")
	waitConverged(g, db)
	// No status claimed the change done before the primary ran the new
	// tier, not even for the moment the operator's cache lagged its write.
	expectNoEarlyClaim(g, versions(), changed, dbpilotv1alpha1.TierLarge)

	for _, pod := range podsOf(g, db) {
		g.Expect(string(pod.UID)).NotTo(Equal(before[pod.Name]), "pod %s was rolled", pod.Name)
		g.Expect(pod.Spec.Containers[0].Resources.Limits.Memory().Cmp(resource.MustParse("4Gi"))).To(BeZero())
		g.Expect(pod.Spec.Containers[0].Resources.Limits.Cpu().String()).To(Equal("2"))
	}
	cm := &corev1.ConfigMap{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ledger-config"}, cm)).To(Succeed())
	g.Expect(cm.Data[desired.PostgresConfigFile]).To(ContainSubstring("shared_buffers = 1024MB"))
	g.Expect(cm.Data[desired.PostgresConfigFile]).To(ContainSubstring("max_connections = 400"))
	g.Expect(*statefulSetOf(g, db).Spec.UpdateStrategy.RollingUpdate.Partition).To(BeZero(), "partition back to 0")
	g.Expect(eventReasons(g, db)).To(ContainElement(dbpilotv1alpha1.EventReasonTierChanged))
}

// TestBiggerTierWithFewerPodsKeepsThemUntilRolledOut changes the tier and
// lowers the replicas at once, as the auto-pilot does when a bigger tier
// needs fewer pods: the pod to go stays, serving reads behind the read-only
// Service and covered by the budget, until the new tier has rolled out.
func TestBiggerTierWithFewerPodsKeepsThemUntilRolledOut(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "shed")
	startOperator(t, ns)

	db := newDatabase(ns, "orders", dbpilotv1alpha1.EngineMariaDB)
	db.Spec.Replicas = ptr.To[int32](2)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)

	update(g, db, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Tier = dbpilotv1alpha1.TierLarge
		db.Spec.Replicas = ptr.To[int32](1)
	})

	// While the StatefulSet keeps two pods, reads go to the replica and the
	// budget stays; once it runs one, every pod runs the new tier.
	var problems []string
	g.Eventually(func(g Gomega) {
		// The operator shrinks the StatefulSet before it switches the
		// Service and drops the budget: read those first, so a StatefulSet
		// still at two pods afterwards proves they switched too early.
		readOnly := &corev1.Service{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.ReadOnlyServiceName()}, readOnly)).To(Succeed())
		pdbErr := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.PodDisruptionBudgetName()}, &policyv1.PodDisruptionBudget{})
		sts := statefulSetOf(g, db)
		pods := podsOf(g, db)
		if *sts.Spec.Replicas == 2 {
			if role := readOnly.Spec.Selector[dbpilotv1alpha1.LabelRole]; role != dbpilotv1alpha1.RoleReplica {
				problems = append(problems, "read-only Service selects "+role+" while two pods run")
			}
			if apierrors.IsNotFound(pdbErr) {
				problems = append(problems, "budget removed while two pods run")
			}
		}
		if *sts.Spec.Replicas < 2 {
			for _, pod := range pods {
				if pod.Annotations[desired.AnnotationTier] != "large" {
					problems = append(problems, pod.Name+" still on the old tier when the StatefulSet shrank")
				}
			}
		}
		g.Expect(pods).To(HaveLen(1))
		g.Expect(pods[0].Annotations[desired.AnnotationTier]).To(Equal("large"))
		g.Expect(readOnly.Spec.Selector[dbpilotv1alpha1.LabelRole]).To(Equal(dbpilotv1alpha1.RolePrimary))
		g.Expect(apierrors.IsNotFound(pdbErr)).To(BeTrue(), "budget kept for one pod")
	}, convergeTimeout, 50*time.Millisecond).Should(Succeed())
	g.Expect(problems).To(BeEmpty())
	waitConverged(g, db)
	g.Expect(eventNotes(g, db)).To(ContainElement("Keeping 2 pods until the new template has rolled out, then scaling to 1"))
}

// TestMinorUpgrade raises a minor version and checks image, status and Event.
func TestMinorUpgrade(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "upgrade")
	startOperator(t, ns)

	db := newDatabase(ns, "billing", dbpilotv1alpha1.EngineMySQL)
	db.Spec.Version = "8.4.2"
	db.Spec.Replicas = ptr.To[int32](2)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	g.Expect(db.Status.Version).To(Equal("8.4.2"))

	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Version = "8.4.3" })
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(db.Status.Version).To(Equal("8.4.3"))
	}, convergeTimeout, pollInterval).Should(Succeed())
	waitConverged(g, db)
	for _, pod := range podsOf(g, db) {
		g.Expect(pod.Spec.Containers[0].Image).To(Equal("docker.io/library/mysql:8.4.3"))
	}
	g.Expect(eventReasons(g, db)).To(ContainElement(dbpilotv1alpha1.EventReasonUpgraded))
}

// TestPausedStopsChanges pauses a Database, changes it, and checks nothing
// moves until it is unpaused.
func TestPausedStopsChanges(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "paused")
	startOperator(t, ns)

	db := newDatabase(ns, "catalog", dbpilotv1alpha1.EnginePostgres)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)

	update(g, db, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Paused = true
		db.Spec.Replicas = ptr.To[int32](2)
	})
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(db.Status.Phase).To(Equal(dbpilotv1alpha1.PhasePaused))
		g.Expect(db.Status.ObservedGeneration).To(Equal(db.Generation))
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(*statefulSetOf(g, db).Spec.Replicas).To(Equal(int32(1)))
	}, 5*time.Second, pollInterval).Should(Succeed())

	update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Paused = false })
	waitConverged(g, db)
	g.Expect(db.Status.ReadyReplicas).To(Equal(int32(2)))
}

// TestUserCredentialsSecret references a Secret that does not exist yet: the
// Database is Degraded naming the Secret; then refused while it names a
// user dbpilot keeps for itself; then proceeds, and dbpilot never writes
// to it.
func TestUserCredentialsSecret(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "usercreds")
	startOperator(t, ns)

	db := newDatabase(ns, "crm", dbpilotv1alpha1.EnginePostgres)
	db.Spec.CredentialsSecretName = "crm-own"
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(db.Status.Phase).To(Equal(dbpilotv1alpha1.PhaseFailed))
		degraded := findCondition(db, dbpilotv1alpha1.ConditionDegraded)
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Reason).To(Equal(dbpilotv1alpha1.ReasonCredentialsInvalid))
		g.Expect(degraded.Message).To(ContainSubstring("crm-own"))
	}, convergeTimeout, pollInterval).Should(Succeed())

	// A user name dbpilot keeps for itself (the superuser's) is refused
	// by name.
	secret := &corev1.Secret{}
	secret.Namespace, secret.Name = ns, "crm-own"
	secret.StringData = map[string]string{"username": "postgres", "password": "s3cret-value-1", "superuser-password": "s3cret-value-2"}
	g.Expect(k8sClient.Create(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(db.Status.Phase).To(Equal(dbpilotv1alpha1.PhaseFailed))
		g.Expect(findCondition(db, dbpilotv1alpha1.ConditionDegraded).Message).To(ContainSubstring(`key username names "postgres", a user dbpilot keeps for itself`))
	}, convergeTimeout, pollInterval).Should(Succeed())
	secret.StringData = map[string]string{"username": "crm"}
	g.Expect(k8sClient.Update(ctx, secret)).To(Succeed())
	version := secret.ResourceVersion
	// The Secret is watched: its change is noticed at once, not at the
	// manager's resync hours later (a credentials problem is no reconcile
	// error, so no backoff retries it either); a minute covers the pods
	// starting on a busy machine.
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		g.Expect(db.Status.Phase).To(Equal(dbpilotv1alpha1.PhaseRunning))
	}, time.Minute, pollInterval).Should(Succeed())
	fetch(g, secret)
	g.Expect(secret.ResourceVersion).To(Equal(version), "the user's Secret is never written")
	spec := statefulSetOf(g, db).Spec.Template.Spec
	var refs []string
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			refs = append(refs, v.Secret.SecretName)
		}
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		for _, e := range c.Env {
			g.Expect(strings.Contains(e.Value, "s3cret")).To(BeFalse(), "no secret value in the pod spec")
		}
		g.Expect(strings.Join(c.Args, " ")).NotTo(ContainSubstring("s3cret"), "no secret value in the pod spec")
	}
	g.Expect(refs).To(ConsistOf("crm-own", "crm-replication", dbpilotv1alpha1.MetricsSecretName, "crm-tls"),
		"the pod reads the credentials from the user's Secret, the replication password and the server certificate from dbpilot's, and the metrics token from the namespace's")
}

// TestDeletedCredentialsAreRegenerated deletes the generated credentials
// Secret of a running Database: dbpilot generates it anew (the instance
// program applies the new passwords to the running engine; tests/instance
// checks that part) and says so in a Warning Event.
func TestDeletedCredentialsAreRegenerated(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "regenerate")
	startOperator(t, ns)

	db := newDatabase(ns, "crm", dbpilotv1alpha1.EnginePostgres)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	old := &corev1.Secret{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "crm-credentials"}, old)).To(Succeed())
	g.Expect(eventReasons(g, db)).NotTo(ContainElement(dbpilotv1alpha1.EventReasonCredentialsRegenerated), "a first creation is no regeneration")

	g.Expect(k8sClient.Delete(ctx, old)).To(Succeed())
	g.Eventually(func(g Gomega) {
		secret := &corev1.Secret{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "crm-credentials"}, secret)).To(Succeed())
		g.Expect(secret.UID).NotTo(Equal(old.UID))
		g.Expect(secret.Data[desired.SecretKeyPassword]).NotTo(BeEmpty())
		g.Expect(secret.Data[desired.SecretKeyPassword]).NotTo(Equal(old.Data[desired.SecretKeyPassword]))
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(eventReasons(g, db)).To(ContainElement(dbpilotv1alpha1.EventReasonCredentialsRegenerated))
	}, convergeTimeout, pollInterval).Should(Succeed())
}

// TestInternalPasswordsSecret: the Secret of the replication and monitoring
// users' passwords holds both keys; a key it lacks (a Secret from an older
// dbpilot) is added, and a value it holds is never changed.
func TestInternalPasswordsSecret(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "internal-passwords")
	startOperator(t, ns)

	db := newDatabase(ns, "billing", dbpilotv1alpha1.EngineMariaDB)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	key := client.ObjectKey{Namespace: ns, Name: db.ReplicationSecretName()}
	secret := &corev1.Secret{}
	g.Expect(k8sClient.Get(ctx, key, secret)).To(Succeed())
	for _, k := range desired.InternalKeys {
		g.Expect(secret.Data[k]).To(HaveLen(32), "key %s", k)
	}
	replication := string(secret.Data[layout.KeyReplicationPassword])
	g.Expect(string(secret.Data[layout.KeyMonitoringPassword])).NotTo(Equal(replication))

	delete(secret.Data, layout.KeyMonitoringPassword)
	g.Expect(k8sClient.Update(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, key, secret)).To(Succeed())
		g.Expect(secret.Data[layout.KeyMonitoringPassword]).To(HaveLen(32))
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Expect(string(secret.Data[layout.KeyReplicationPassword])).To(Equal(replication), "the replication password was changed")
}

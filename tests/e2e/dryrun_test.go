package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/internal/imagecatalog"
	"github.com/dbpilot/dbpilot/internal/randomspec"
)

const (
	// dryRunSamples is how many random Databases TestRandomSpecsDryRun
	// sends.
	dryRunSamples = 60
	// randomSpecSeedEnv replays TestRandomSpecsDryRun's draw: its seed is
	// logged.
	randomSpecSeedEnv = "DBPILOT_SPEC_SEED"
)

// TestRandomSpecsDryRun draws random Databases (the ones FuzzBuilders
// renders), has the API server accept each with a dry-run create (so the
// drawing stays within the API's rules), and server-side applies every
// child the builders render for it with dry-run, and creates its first
// pod with dry-run, in a namespace enforcing PodSecurity restricted: the
// API server's own validation and admission take all of them.
func TestRandomSpecsDryRun(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "dryrun")
	r := rand.New(rand.NewPCG(seedFrom(t, g, randomSpecSeedEnv), 3))
	images := imagecatalog.Default()
	for i := range dryRunSamples {
		name := fmt.Sprintf("R%d %x", i, r.Uint64())
		db := randomspec.Database(r, ns, name)
		created := db.DeepCopy()
		created.UID = ""
		g.Expect(k8sClient.Create(ctx, created, client.DryRunAll)).To(Succeed(), "the Database drawn: %+v", db.Spec)

		sts := desired.StatefulSet(db, desired.StatefulSetOptions{Images: images})
		applied := []runtime.ApplyConfiguration{
			desired.ConfigMap(db), desired.HeadlessService(db), desired.ReadWriteService(db),
			desired.ReadOnlyService(db, db.EffectiveReplicas()), desired.PodDisruptionBudget(db, db.EffectiveReplicas()), sts,
		}
		if db.CreatesBackupClaim() {
			applied = append(applied, desired.BackupClaim(db))
		}
		for _, service := range desired.ExternalServices(db, db.EffectiveReplicas()) {
			if service != nil {
				applied = append(applied, service)
			}
		}
		for _, obj := range applied {
			g.Expect(k8sClient.Apply(ctx, obj, client.FieldOwner("dryrun-test"), client.ForceOwnership, client.DryRunAll)).
				To(Succeed(), "%T of %s (%+v)", obj, db.Name, db.Spec)
		}
		for _, obj := range []client.Object{
			podOf(g, sts),
			desired.DesignationConfigMap(db),
			desired.CredentialsSecret(db, desired.Credentials{Password: "p", SuperuserPassword: "s"}),
			desired.ReplicationSecret(db, desired.InternalPasswords{Replication: "r", Monitoring: "m"}),
		} {
			g.Expect(k8sClient.Create(ctx, obj, client.DryRunAll)).To(Succeed(), "%T of %s", obj, db.Name)
		}
		for _, u := range db.Spec.Users {
			secret := desired.UserSecret(db, u.Name, "p")
			g.Expect(k8sClient.Create(ctx, secret, client.DryRunAll)).To(Succeed(), "the Secret of user %s of %s", u.Name, db.Name)
		}
	}
}

// podOf is the first pod the StatefulSet controller would create: its
// template, named after ordinal 0, with the volumes of its claim
// templates. PodSecurity admission enforces on pods, not on their
// controllers.
func podOf(g Gomega, sts *appsv1ac.StatefulSetApplyConfiguration) *corev1.Pod {
	data, err := json.Marshal(sts)
	g.Expect(err).NotTo(HaveOccurred())
	var typed appsv1.StatefulSet
	g.Expect(json.Unmarshal(data, &typed)).To(Succeed())
	pod := &corev1.Pod{ObjectMeta: typed.Spec.Template.ObjectMeta, Spec: typed.Spec.Template.Spec}
	pod.Namespace, pod.Name = typed.Namespace, typed.Name+"-0"
	for _, claim := range typed.Spec.VolumeClaimTemplates {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: claim.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name + "-" + pod.Name}}})
	}
	return pod
}

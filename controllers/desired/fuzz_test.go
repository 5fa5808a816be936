package desired_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/internal/imagecatalog"
	"github.com/dbpilot/dbpilot/internal/randomspec"
)

// FuzzBuilders renders every child of random valid Databases, hostile
// names and annotations included, and checks what any Kubernetes would
// need of them: no panic; names the API server takes (a StatefulSet's
// leaves room for its pods' hostnames and revision label); valid labels;
// every container restricted, with requests equal to limits; the claim
// template of spec.storage.size; a template hash that depends on the
// Database, not on the call or the replicas. tests/e2e applies a sample
// of the same Databases' children with server-side dry-run.
func FuzzBuilders(f *testing.F) {
	f.Add(uint64(1), uint64(2), "orders", "")
	f.Add(uint64(7), uint64(7), "Ünïcode name with spaces and a very long tail beyond forty characters", "orders-0,../../etc,")
	f.Add(uint64(0), uint64(0), "-", `{"destination":`)
	f.Fuzz(func(t *testing.T, seed1, seed2 uint64, name, annotation string) {
		db := randomspec.Database(rand.New(rand.NewPCG(seed1, seed2)), "shop", name)
		db.Annotations = map[string]string{
			dbpilotv1alpha1.AnnotationFenced:        annotation,
			dbpilotv1alpha1.AnnotationSwitchoverTo:  annotation,
			dbpilotv1alpha1.AnnotationRestoreSource: annotation,
		}
		images := imagecatalog.Default()
		sts := desired.StatefulSet(db, desired.StatefulSetOptions{Images: images})
		children := map[string]metav1.Object{}
		for _, obj := range []any{
			desired.ConfigMap(db), desired.HeadlessService(db), desired.ReadWriteService(db),
			desired.ReadOnlyService(db, db.EffectiveReplicas()), sts, desired.PodDisruptionBudget(db, db.EffectiveReplicas()),
			desired.BackupClaim(db), desired.DesignationConfigMap(db),
			desired.CredentialsSecret(db, desired.Credentials{Password: "p", SuperuserPassword: "s"}),
			desired.ReplicationSecret(db, desired.InternalPasswords{Replication: "r", Monitoring: "m"}),
		} {
			meta := objectMeta(t, obj)
			children[meta.GetName()] = meta
		}
		for name, meta := range children {
			if errs := validation.NameIsDNSSubdomain(name, false); len(errs) > 0 {
				t.Errorf("name %q: %v", name, errs)
			}
			for k, v := range meta.GetLabels() {
				if errs := append(utilvalidation.IsQualifiedName(k), utilvalidation.IsValidLabelValue(v)...); len(errs) > 0 {
					t.Errorf("%s label %s=%q: %v", name, k, v, errs)
				}
			}
		}
		for _, svc := range []string{db.HeadlessServiceName(), db.ReadWriteServiceName(), db.ReadOnlyServiceName()} {
			if errs := validation.NameIsDNS1035Label(svc, false); len(errs) > 0 {
				t.Errorf("Service %q: %v", svc, errs)
			}
		}
		// Pods are named <statefulset>-<ordinal> and labelled
		// controller-revision-hash=<statefulset>-<10 characters>.
		if n := len(*sts.Name) + len("-") + 10; n > utilvalidation.DNS1123LabelMaxLength {
			t.Errorf("StatefulSet name %q leaves no room for its revision label (%d > 63)", *sts.Name, n)
		}
		for _, c := range append(sts.Spec.Template.Spec.InitContainers, sts.Spec.Template.Spec.Containers...) {
			checkRestricted(t, c)
		}
		if got, want := (*sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests)[corev1.ResourceStorage], db.SpecStorageSize(); got.Cmp(want) != 0 {
			t.Errorf("claim template of %s, spec.storage.size %s", got.String(), want.String())
		}
		hash := desired.TemplateHash(desired.PodTemplate(db, images, desired.Restarts{}))
		if again := desired.TemplateHash(desired.PodTemplate(db, images, desired.Restarts{})); again != hash {
			t.Errorf("template hash %s then %s", hash, again)
		}
		*db.Spec.Replicas = *db.Spec.Replicas%16 + 1
		if other := desired.TemplateHash(desired.PodTemplate(db, images, desired.Restarts{})); other != hash {
			t.Errorf("template hash changed with the replicas: %s, %s", hash, other)
		}
	})
}

// objectMeta reads the metadata of a typed object or an apply
// configuration.
func objectMeta(t *testing.T, obj any) metav1.Object {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("marshalling %T: %v", obj, err)
	}
	var out struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("reading %T's metadata: %v", obj, err)
	}
	return &out.Metadata
}

// checkRestricted checks what PodSecurity restricted asks of a container,
// and that its resources make the pod Guaranteed.
func checkRestricted(t *testing.T, c corev1ac.ContainerApplyConfiguration) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		data, _ := json.Marshal(sc)
		t.Errorf("container %s is not restricted: %s", *c.Name, data)
	}
	if c.Resources == nil || c.Resources.Requests == nil || c.Resources.Limits == nil {
		t.Errorf("container %s has no requests and limits", *c.Name)
		return
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := (*c.Resources.Requests)[r], (*c.Resources.Limits)[r]
		if req.IsZero() || req.Cmp(lim) != 0 {
			t.Errorf("container %s %s: request %s, limit %s", *c.Name, r, req.String(), lim.String())
		}
	}
}

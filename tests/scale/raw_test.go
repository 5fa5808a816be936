package scale_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"k8s.io/client-go/kubernetes"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/internal/imagecatalog"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// rawFieldManager applies the raw client's objects.
const rawFieldManager = "dbpilot-scale-raw"

// rawManagedBy replaces dbpilot's managed-by label on the raw client's
// objects, so the operator, started later, neither caches nor adopts them.
const rawManagedBy = "dbpilot-scale-raw"

// relabelled copies labels with dbpilot's managed-by label, if present,
// replaced by the raw client's.
func relabelled(labels map[string]string) map[string]string {
	out := maps.Clone(labels)
	if _, ok := out[dbpilotv1alpha1.LabelManagedBy]; ok {
		out[dbpilotv1alpha1.LabelManagedBy] = rawManagedBy
	}
	return out
}

// rawSecret strips a generated Secret of its owner and dbpilot's label.
func rawSecret(s *corev1.Secret) *corev1.Secret {
	s.OwnerReferences = nil
	s.Labels = relabelled(s.Labels)
	return s
}

// createRawChildren creates, with cs and no operator, the children the
// operator creates for db (a defaulted Database that does not exist): the
// generated Secrets (the certificate authorities, the server certificate
// and the application user's client certificate issued as the operator
// issues them), the designation and engine ConfigMaps, the three
// Services, the StatefulSet and, when the Database needs them, the
// PodDisruptionBudgets. The objects come from the operator's own builders,
// so both runs ask the cluster for the same work.
func createRawChildren(ctx context.Context, cs kubernetes.Interface, db *dbpilotv1alpha1.Database, images imagecatalog.Catalog) error {
	create := metav1.CreateOptions{FieldManager: rawFieldManager}
	apply := metav1.ApplyOptions{FieldManager: rawFieldManager, Force: true}
	now := time.Now()
	authority, err := pki.NewAuthority(db.Name, now)
	if err != nil {
		return err
	}
	server, err := pki.IssueServer(authority, db.ServerNames(), now)
	if err != nil {
		return err
	}
	clients, err := pki.NewAuthority(db.Name+" clients", now)
	if err != nil {
		return err
	}
	application, err := pki.IssueClient(clients, desired.AppUsername, now)
	if err != nil {
		return err
	}
	for _, secret := range []*corev1.Secret{
		desired.CredentialsSecret(db, desired.Credentials{Password: rand.Text(), SuperuserPassword: rand.Text()}),
		desired.ReplicationSecret(db, desired.InternalPasswords{Replication: rand.Text(), Monitoring: rand.Text()}),
		desired.CertificateAuthoritySecret(db, authority),
		desired.ServerCertificateSecret(db, server, authority.CertPEM, clients.CertPEM),
		desired.ClientAuthoritySecret(db, clients),
		desired.ApplicationCertificateSecret(db, application, clients.CertPEM),
	} {
		if _, err := cs.CoreV1().Secrets(db.Namespace).Create(ctx, rawSecret(secret), create); err != nil {
			return fmt.Errorf("Secret %s: %w", secret.Name, err)
		}
	}
	designation := desired.DesignationConfigMap(db)
	designation.OwnerReferences = nil
	designation.Labels = relabelled(designation.Labels)
	if _, err := cs.CoreV1().ConfigMaps(db.Namespace).Create(ctx, designation, create); err != nil {
		return fmt.Errorf("designation ConfigMap: %w", err)
	}
	config := desired.ConfigMap(db)
	config.OwnerReferences = nil
	config.Labels = relabelled(config.Labels)
	if _, err := cs.CoreV1().ConfigMaps(db.Namespace).Apply(ctx, config, apply); err != nil {
		return fmt.Errorf("ConfigMap: %w", err)
	}
	replicas := db.EffectiveReplicas()
	for _, svc := range []*corev1ac.ServiceApplyConfiguration{
		desired.HeadlessService(db),
		desired.ReadWriteService(db),
		desired.ReadOnlyService(db, replicas),
	} {
		svc.OwnerReferences = nil
		svc.Labels = relabelled(svc.Labels)
		svc.Spec.Selector = relabelled(svc.Spec.Selector)
		if _, err := cs.CoreV1().Services(db.Namespace).Apply(ctx, svc, apply); err != nil {
			return fmt.Errorf("Service %s: %w", *svc.Name, err)
		}
	}
	sts := desired.StatefulSet(db, desired.StatefulSetOptions{Images: images})
	sts.OwnerReferences = nil
	sts.Labels = relabelled(sts.Labels)
	sts.Spec.Selector = metav1ac.LabelSelector().WithMatchLabels(relabelled(sts.Spec.Selector.MatchLabels))
	sts.Spec.Template.Labels = relabelled(sts.Spec.Template.Labels)
	for _, claim := range sts.Spec.VolumeClaimTemplates {
		claim.Labels = relabelled(claim.Labels)
	}
	if _, err := cs.AppsV1().StatefulSets(db.Namespace).Apply(ctx, sts, apply); err != nil {
		return fmt.Errorf("StatefulSet: %w", err)
	}
	budgets := []*policyv1ac.PodDisruptionBudgetApplyConfiguration{}
	if desired.NeedsPodDisruptionBudget(replicas) {
		budgets = append(budgets, desired.PodDisruptionBudget(db, replicas))
	}
	if desired.NeedsPrimaryPodDisruptionBudget(db, replicas) {
		budgets = append(budgets, desired.PrimaryPodDisruptionBudget(db))
	}
	for _, pdb := range budgets {
		pdb.OwnerReferences = nil
		pdb.Labels = relabelled(pdb.Labels)
		pdb.Spec.Selector = metav1ac.LabelSelector().WithMatchLabels(relabelled(pdb.Spec.Selector.MatchLabels))
		if _, err := cs.PolicyV1().PodDisruptionBudgets(db.Namespace).Apply(ctx, pdb, apply); err != nil {
			return fmt.Errorf("PodDisruptionBudget: %w", err)
		}
	}
	return nil
}

// createRaw creates the children of every Database in dbs at once, one
// goroutine per Database, and each namespace's metrics Secret.
func createRaw(ctx context.Context, cs kubernetes.Interface, dbs []*dbpilotv1alpha1.Database) error {
	images := imagecatalog.Default()
	errs := make(chan error, 2*len(dbs)) // at most one per Database and one per namespace
	var wg sync.WaitGroup
	seen := map[string]bool{}
	for _, db := range dbs {
		if !seen[db.Namespace] {
			seen[db.Namespace] = true
			wg.Go(func() {
				secret := rawSecret(desired.MetricsSecret(db.Namespace, rand.Text()))
				if _, err := cs.CoreV1().Secrets(db.Namespace).Create(ctx, secret, metav1.CreateOptions{FieldManager: rawFieldManager}); err != nil {
					errs <- fmt.Errorf("metrics Secret of %s: %w", db.Namespace, err)
				}
			})
		}
		wg.Go(func() {
			if err := createRawChildren(ctx, cs, db, images); err != nil {
				errs <- fmt.Errorf("%s/%s: %w", db.Namespace, db.Name, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	return nil
}

// databasesLike returns n copies of template named db-I, spread over
// namespaces PREFIX-J of databasesPerNamespace each, with made-up UIDs.
func databasesLike(template *dbpilotv1alpha1.Database, prefix string, n int) []*dbpilotv1alpha1.Database {
	dbs := make([]*dbpilotv1alpha1.Database, n)
	for i := range dbs {
		db := template.DeepCopy()
		db.Namespace = namespaceOf(prefix, i)
		db.Name = fmt.Sprintf("db-%d", i)
		db.UID = types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
		dbs[i] = db
	}
	return dbs
}

// databasesPerNamespace spreads the Databases as a fleet of teams would.
const databasesPerNamespace = 50

// namespaceOf is the namespace of the i-th Database of a run.
func namespaceOf(prefix string, i int) string {
	return fmt.Sprintf("%s-%d", prefix, i/databasesPerNamespace)
}

// namespacesOf lists the namespaces of a run of n Databases.
func namespacesOf(prefix string, n int) []string {
	var names []string
	for i := 0; i < n; i += databasesPerNamespace {
		names = append(names, namespaceOf(prefix, i))
	}
	return names
}

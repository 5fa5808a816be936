package e2e_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/internal/localcluster"
	"github.com/dbpilot/dbpilot/internal/options"
)

// csv holds the parts of the bundle's ClusterServiceVersion that OLM turns
// into objects when it installs the operator.
type csv struct {
	Spec struct {
		Install struct {
			Spec struct {
				ClusterPermissions []csvPermission `json:"clusterPermissions"`
				Permissions        []csvPermission `json:"permissions"`
				Deployments        []struct {
					Name string                `json:"name"`
					Spec appsv1.DeploymentSpec `json:"spec"`
				} `json:"deployments"`
			} `json:"spec"`
		} `json:"install"`
	} `json:"spec"`
}

type csvPermission struct {
	ServiceAccountName string              `json:"serviceAccountName"`
	Rules              []rbacv1.PolicyRule `json:"rules"`
}

func readCSV(t *testing.T) *csv {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "bundle", "manifests", "dbpilot.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatalf("reading the bundle's CSV (run `make bundle`): %v", err)
	}
	out := &csv{}
	if err := yaml.Unmarshal(data, out); err != nil {
		t.Fatalf("parsing the CSV: %v", err)
	}
	if len(out.Spec.Install.Spec.Deployments) != 1 || len(out.Spec.Install.Spec.ClusterPermissions) == 0 {
		t.Fatalf("the CSV has %d deployments and %d cluster permissions", len(out.Spec.Install.Spec.Deployments), len(out.Spec.Install.Spec.ClusterPermissions))
	}
	return out
}

// TestCSVPermissionsHaveNoWildcards checks least privilege in the bundle.
func TestCSVPermissionsHaveNoWildcards(t *testing.T) {
	spec := readCSV(t).Spec.Install.Spec
	for _, perm := range append(spec.ClusterPermissions, spec.Permissions...) {
		for _, rule := range perm.Rules {
			for _, list := range [][]string{rule.Verbs, rule.Resources, rule.APIGroups, rule.NonResourceURLs} {
				if slices.Contains(list, "*") {
					t.Errorf("wildcard in rule %+v", rule)
				}
			}
		}
	}
}

// installLikeOLM creates what OLM creates from the CSV for an install mode:
// the ServiceAccount, the cluster permissions as a ClusterRole, and the
// namespaced permissions as a Role in the operator's namespace and in each
// target namespace (OwnNamespace, SingleNamespace), or as a ClusterRole
// (AllNamespaces, no targets). It returns a REST config that acts as the
// ServiceAccount.
func installLikeOLM(t *testing.T, g Gomega, c *csv, operatorNamespace string, targets []string) *rest.Config {
	ctx := context.Background()
	spec := c.Spec.Install.Spec
	sa := spec.Deployments[0].Spec.Template.Spec.ServiceAccountName
	g.Expect(k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: sa}})).To(Succeed())
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: operatorNamespace}

	bindCluster := func(name string, rules []rbacv1.PolicyRule) {
		g.Expect(k8sClient.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules})).To(Succeed())
		g.Expect(k8sClient.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{subject},
		})).To(Succeed())
	}
	for i, perm := range spec.ClusterPermissions {
		g.Expect(perm.ServiceAccountName).To(Equal(sa))
		bindCluster(fmt.Sprintf("%s-cluster-%d", operatorNamespace, i), perm.Rules)
	}
	for i, perm := range spec.Permissions {
		g.Expect(perm.ServiceAccountName).To(Equal(sa))
		if len(targets) == 0 {
			bindCluster(fmt.Sprintf("%s-ns-%d", operatorNamespace, i), perm.Rules)
			continue
		}
		for _, ns := range slices.Compact(slices.Sorted(slices.Values(append([]string{operatorNamespace}, targets...)))) {
			name := fmt.Sprintf("%s-ns-%d", operatorNamespace, i)
			g.Expect(k8sClient.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: perm.Rules})).To(Succeed())
			g.Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
				Subjects:   []rbacv1.Subject{subject},
			})).To(Succeed())
		}
	}
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:%s", operatorNamespace, sa),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace, "system:authenticated"},
	}
	return cfg
}

// managerOptionsFromCSV parses the manager container's arguments, as the
// Deployment runs it, with WATCH_NAMESPACE as OLM sets it.
func managerOptionsFromCSV(t *testing.T, c *csv, operatorNamespace, watch string) *options.Options {
	container := c.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.Containers[0]
	t.Setenv(options.WatchNamespaceEnv, watch)
	opts := options.Default()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	opts.BindFlags(fs)
	if err := fs.Parse(container.Args); err != nil {
		t.Fatalf("parsing the manager's arguments %v: %v", container.Args, err)
	}
	// In a pod the Lease namespace comes from the ServiceAccount's mount.
	opts.LeaderElectionNamespace = operatorNamespace
	return opts
}

// TestInstalledTheOLMWay runs the operator as OLM would install it from the
// bundle, with exactly the CSV's permissions, in the OwnNamespace,
// SingleNamespace and AllNamespaces install modes, and checks a Database
// reconciles end to end and is deleted cleanly.
func TestInstalledTheOLMWay(t *testing.T) {
	modes := []struct {
		mode              string
		operatorNamespace string
		databaseNamespace string
		targets           []string
		watch             string
	}{
		{mode: "OwnNamespace", operatorNamespace: "olm-own", databaseNamespace: "olm-own", targets: []string{"olm-own"}, watch: "olm-own"},
		{mode: "SingleNamespace", operatorNamespace: "olm-single", databaseNamespace: "olm-single-db", targets: []string{"olm-single-db"}, watch: "olm-single-db"},
		{mode: "AllNamespaces", operatorNamespace: "olm-all", databaseNamespace: "olm-tenant", watch: ""},
	}
	c := readCSV(t)
	for _, m := range modes {
		t.Run(m.mode, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			restrictedNamespace(t, m.operatorNamespace)
			if m.databaseNamespace != m.operatorNamespace {
				restrictedNamespace(t, m.databaseNamespace)
			}
			cfg := installLikeOLM(t, g, c, m.operatorNamespace, m.targets)
			opts := managerOptionsFromCSV(t, c, m.operatorNamespace, m.watch)
			g.Expect(opts.LeaderElection).To(BeTrue(), "the CSV's manager runs with leader election")
			op := startOperatorWith(t, cfg, opts)

			db := newDatabase(m.databaseNamespace, "olm", dbpilotv1alpha1.EnginePostgres)
			db.Spec.DeletionPolicy = dbpilotv1alpha1.DeletionPolicyDelete
			g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
			waitConverged(g, db)
			// Growing the volume reads its cluster-scoped StorageClass and
			// patches the namespaced claim: both granted in every mode.
			update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Storage.Size = ptr.To(resource.MustParse("3Gi")) })
			g.Eventually(func(g Gomega) {
				claim := &corev1.PersistentVolumeClaim{}
				g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: claimName(db, 0)}, claim)).To(Succeed())
				g.Expect(claim.Spec.Resources.Requests.Storage().String()).To(Equal("3Gi"))
			}, convergeTimeout, pollInterval).Should(Succeed())
			g.Expect(k8sClient.Delete(ctx, db)).To(Succeed())
			g.Eventually(func() error { return k8sClient.Get(ctx, keyOf(db), db) }, convergeTimeout, pollInterval).Should(WithTransform(isNotFound, BeTrue()))
			g.Expect(op.writes.Load()).To(BeNumerically(">", 0))

			// The manager's pod, as the CSV's Deployment declares it, is
			// admitted in a namespace that enforces PodSecurity restricted.
			deployment := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: m.operatorNamespace, Name: c.Spec.Install.Spec.Deployments[0].Name},
				Spec:       c.Spec.Install.Spec.Deployments[0].Spec,
			}
			g.Expect(k8sClient.Create(ctx, deployment)).To(Succeed())
			g.Eventually(func(g Gomega) {
				fetch(g, deployment)
				g.Expect(deployment.Status.ReadyReplicas).To(Equal(int32(1)), "conditions: %+v", deployment.Status.Conditions)
			}, convergeTimeout, pollInterval).Should(Succeed())
		})
	}
}

// TestCSVPermissionsAreNotWider asks the API server what the operator's
// ServiceAccount, installed from the CSV, may do: what it needs, and nothing
// it does not. Installed for its own namespace it may touch Secrets, or any
// other namespaced kind, there and nowhere else; installed for all
// namespaces it may everywhere.
func TestCSVPermissionsAreNotWider(t *testing.T) {
	g := NewWithT(t)
	c := readCSV(t)
	own := restrictedNamespace(t, "olm-rbac")
	installLikeOLM(t, g, c, own, []string{own})
	all := restrictedNamespace(t, "olm-rbac-all")
	installLikeOLM(t, g, c, all, nil)
	account := c.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.ServiceAccountName
	can := func(operatorNamespace, verb, group, resource, namespace string) bool {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + operatorNamespace + ":" + account,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: namespace},
		}}
		created, err := clientset.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), review, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return created.Status.Allowed
	}
	// What the operator needs where it watches, in both install modes.
	needed := [][3]string{
		{"patch", "apps", "statefulsets"}, {"create", "", "secrets"}, {"watch", "", "secrets"}, {"patch", "", "pods"},
		{"update", "dbpilot.io", "databases/finalizers"}, {"create", "dbpilot.io", "databasebackups"},
		{"update", "dbpilot.io", "databasebackups/status"}, {"create", "", "persistentvolumeclaims"},
	}
	clusterWide := [][4]string{
		{"create", "coordination.k8s.io", "leases", own}, {"create", "authentication.k8s.io", "tokenreviews", ""},
		{"list", "storage.k8s.io", "storageclasses", ""}, {"watch", "storage.k8s.io", "storageclasses", ""},
		{"get", "scheduling.k8s.io", "priorityclasses", ""}, {"watch", "scheduling.k8s.io", "priorityclasses", ""},
		{"list", "", "nodes", ""}, {"watch", "", "nodes", ""},
	}
	// The API server authorizes from its own cache of the RBAC objects
	// just created: what is allowed may take a moment to be. Once it is,
	// what is denied is denied for its own sake.
	g.Eventually(func(g Gomega) {
		for _, n := range needed {
			g.Expect(can(own, n[0], n[1], n[2], own)).To(BeTrue(), "OwnNamespace needs %v in %s", n, own)
			g.Expect(can(all, n[0], n[1], n[2], "shop")).To(BeTrue(), "AllNamespaces needs %v in shop", n)
		}
		for _, a := range clusterWide {
			g.Expect(can(own, a[0], a[1], a[2], a[3])).To(BeTrue(), "needs %v", a)
		}
	}, convergeTimeout, pollInterval).Should(Succeed())
	for _, n := range needed {
		g.Expect(can(own, n[0], n[1], n[2], "shop")).To(BeFalse(), "OwnNamespace must not be allowed %v in shop", n)
	}
	for _, verb := range []string{"get", "list", "watch", "create"} {
		g.Expect(can(own, verb, "", "secrets", "")).To(BeFalse(), "OwnNamespace must not %s Secrets cluster-wide", verb)
	}
	denied := [][4]string{
		{"delete", "", "secrets", own}, {"create", "", "pods", own}, {"delete", "", "namespaces", ""},
		{"create", "rbac.authorization.k8s.io", "clusterroles", ""}, {"patch", "", "nodes", ""}, {"delete", "", "nodes", ""},
		{"create", "dbpilot.io", "databases", own}, {"delete", "", "persistentvolumes", ""},
		{"create", "coordination.k8s.io", "leases", "shop"}, {"create", "apps", "deployments", own},
		{"deletecollection", "dbpilot.io", "databasebackups", own}, {"delete", "storage.k8s.io", "storageclasses", ""},
		{"create", "scheduling.k8s.io", "priorityclasses", ""},
	}
	// CRDs are OLM's to install and upgrade, never the operator's.
	for _, verb := range []string{"create", "patch", "update", "delete"} {
		denied = append(denied, [4]string{verb, "apiextensions.k8s.io", "customresourcedefinitions", ""})
	}
	for _, d := range denied {
		g.Expect(can(own, d[0], d[1], d[2], d[3])).To(BeFalse(), "must not be allowed %v", d)
	}
	for _, d := range [][4]string{
		{"delete", "", "secrets", "shop"}, {"create", "", "pods", "shop"}, {"create", "dbpilot.io", "databases", "shop"},
		{"create", "apiextensions.k8s.io", "customresourcedefinitions", ""}, {"patch", "apiextensions.k8s.io", "customresourcedefinitions", ""},
	} {
		g.Expect(can(all, d[0], d[1], d[2], d[3])).To(BeFalse(), "AllNamespaces must not be allowed %v", d)
	}
}

// TestCSVPermissionsMatchTheirScope asks the API server's discovery for the
// scope of every kind the CSV grants: the namespaced permissions name only
// namespaced kinds (a cluster-scoped kind there would be denied in an
// OwnNamespace install), and the cluster permissions only cluster-scoped
// kinds (a namespaced kind there would be granted in every namespace).
func TestCSVPermissionsMatchTheirScope(t *testing.T) {
	g := NewWithT(t)
	spec := readCSV(t).Spec.Install.Spec
	mapper := k8sClient.RESTMapper()
	namespaced := func(group, resource string) bool {
		base, _, _ := strings.Cut(resource, "/")
		kind, err := mapper.KindFor(schema.GroupVersionResource{Group: group, Resource: base})
		g.Expect(err).NotTo(HaveOccurred(), "resource %s in group %q", resource, group)
		mapping, err := mapper.RESTMapping(kind.GroupKind(), kind.Version)
		g.Expect(err).NotTo(HaveOccurred(), "scope of %s", kind)
		return mapping.Scope.Name() == meta.RESTScopeNameNamespace
	}
	for _, perm := range spec.Permissions {
		for _, rule := range perm.Rules {
			g.Expect(rule.NonResourceURLs).To(BeEmpty(), "non-resource URLs are cluster-wide: %+v", rule)
			for _, group := range rule.APIGroups {
				for _, resource := range rule.Resources {
					g.Expect(namespaced(group, resource)).To(BeTrue(), "permissions grant the cluster-scoped %s in %q", resource, group)
				}
			}
		}
	}
	for _, perm := range spec.ClusterPermissions {
		for _, rule := range perm.Rules {
			for _, group := range rule.APIGroups {
				for _, resource := range rule.Resources {
					g.Expect(namespaced(group, resource)).To(BeFalse(), "clusterPermissions grant the namespaced %s in %q in every namespace", resource, group)
				}
			}
		}
	}
}

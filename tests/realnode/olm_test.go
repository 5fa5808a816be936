package realnode_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/internal/localcluster"
	"github.com/dbpilot/dbpilot/internal/localimages"
)

const (
	csvName       = "dbpilot.v0.1.0"
	catalogSource = "dbpilot-catalog"
	olmNamespace  = "olm"
)

// TestOLMInstallsTheOperator installs dbpilot the way OperatorHub users do:
// real OLM v0.38.0 (its operators running as pods on the real node) serves
// the project's catalog image, a Subscription installs the bundle, the CSV
// reaches Succeeded, and the operator OLM deployed — the operator image
// running as a pod — reconciles a Database into a PostgreSQL that answers.
// Three install modes the CSV supports are exercised in turn:
// OwnNamespace, SingleNamespace (the Databases in another namespace than the
// operator) and AllNamespaces; in the first two, the operator may touch
// Secrets only in the namespaces it serves.
func TestOLMInstallsTheOperator(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	root, err := localcluster.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	bin, err := localcluster.DefaultBinDir()
	g.Expect(err).NotTo(HaveOccurred())

	start := time.Now()
	pushOLMImages(t, ctx, root, bin)
	t.Logf("OLM, opm, bundle and catalog images built and pushed in %.1fs", time.Since(start).Seconds())

	_, err = envtest.InstallCRDs(cluster.RESTConfig, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(bin, "olm-crds")}, ErrorIfPathMissing: true,
	})
	g.Expect(err).NotTo(HaveOccurred(), "installing OLM's CRDs")
	applyFile(g, filepath.Join(root, "tests", "realnode", "testdata", "olm.yaml"))
	// OLM's pods hold CPU requests the later tests' database pods need (the
	// node has 2 CPUs): they go with their namespaces when this test ends.
	t.Cleanup(func() { removeNamespaces(t, olmNamespace, "operators") })
	start = time.Now()
	for _, name := range []string{"olm-operator", "catalog-operator"} {
		waitDeploymentAvailable(g, olmNamespace, name)
	}
	t.Logf("OLM's operators available in %.1fs", time.Since(start).Seconds())

	apply(g, object("operators.coreos.com/v1alpha1", "CatalogSource", olmNamespace, catalogSource, map[string]any{
		"sourceType":  "grpc",
		"image":       localimages.CatalogImage,
		"displayName": "dbpilot (local)",
	}))
	start = time.Now()
	g.Eventually(func() (string, error) {
		cs := &unstructured.Unstructured{}
		cs.SetAPIVersion("operators.coreos.com/v1alpha1")
		cs.SetKind("CatalogSource")
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: olmNamespace, Name: catalogSource}, cs)
		state, _, _ := unstructured.NestedString(cs.Object, "status", "connectionState", "lastObservedState")
		return state, err
	}, 3*time.Minute, time.Second).Should(Equal("READY"))
	t.Logf("catalog source READY in %.1fs", time.Since(start).Seconds())

	t.Run("OwnNamespace", func(t *testing.T) {
		ns := "dbpilot-own"
		restrictedNamespace(t, ns)
		apply(NewWithT(t), object("operators.coreos.com/v1", "OperatorGroup", ns, "dbpilot", map[string]any{
			"targetNamespaces": []any{ns},
		}))
		installAndUse(t, ns, ns)
	})
	t.Run("SingleNamespace", func(t *testing.T) {
		ns, databases := "dbpilot-single", "dbpilot-single-databases"
		restrictedNamespace(t, ns)
		restrictedNamespace(t, databases)
		apply(NewWithT(t), object("operators.coreos.com/v1", "OperatorGroup", ns, "dbpilot", map[string]any{
			"targetNamespaces": []any{databases},
		}))
		installAndUse(t, ns, databases)
	})
	t.Run("AllNamespaces", func(t *testing.T) {
		// The namespace "operators" holds OLM's global OperatorGroup.
		databases := "olm-all-databases"
		restrictedNamespace(t, databases)
		installAndUse(t, "operators", databases)
	})
}

// installAndUse subscribes to dbpilot in operatorNS, waits for the CSV to
// succeed, has the OLM-installed operator run a Database in databaseNS,
// then removes the Database and the installation.
func installAndUse(t *testing.T, operatorNS, databaseNS string) {
	g := NewWithT(t)
	ctx := context.Background()
	start := time.Now()
	apply(g, object("operators.coreos.com/v1alpha1", "Subscription", operatorNS, "dbpilot", map[string]any{
		"channel":             "stable",
		"name":                "dbpilot",
		"source":              catalogSource,
		"sourceNamespace":     olmNamespace,
		"installPlanApproval": "Automatic",
	}))
	csv := &unstructured.Unstructured{}
	csv.SetAPIVersion("operators.coreos.com/v1alpha1")
	csv.SetKind("ClusterServiceVersion")
	g.Eventually(func() (string, error) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: csvName}, csv)
		phase, _, _ := unstructured.NestedString(csv.Object, "status", "phase")
		return phase, err
	}, 5*time.Minute, time.Second).Should(Equal("Succeeded"))
	t.Logf("%s: Subscription -> CSV Succeeded in %.1fs", operatorNS, time.Since(start).Seconds())

	deployment := &appsv1.Deployment{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: "dbpilot-controller-manager"}, deployment)).To(Succeed())
	g.Expect(deployment.Spec.Template.Spec.Containers[0].Image).To(Equal(localimages.OperatorImage))
	g.Expect(deployment.Status.ReadyReplicas).To(Equal(int32(1)), "the operator runs as a pod")
	// The manager runs as non-root with a read-only root filesystem.
	expectUnprivilegedPods(g, operatorNS, deployment.Spec.Selector.MatchLabels)
	checkSecretAccess(g, operatorNS, databaseNS, deployment.Spec.Template.Spec.ServiceAccountName)

	db := newDatabase(databaseNS, "olm", dbpilotv1alpha1.EnginePostgres, "15", 1)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	took := waitAvailable(g, db, 3*time.Minute)
	t.Logf("%s: Database reconciled by the OLM-installed operator, Available in %.1fs", operatorNS, took.Seconds())

	// The operator's metrics, scraped as Prometheus does: refused without
	// a token, and with one they count the Database and its passes.
	metrics := newOperatorMetrics(g, operatorNS, t.Cleanup)
	g.Eventually(func() (int, error) {
		code, _, err := metrics.get("")
		return code, err
	}, 30*time.Second, 500*time.Millisecond).Should(Equal(http.StatusUnauthorized), "an unauthenticated scrape")
	// A ServiceAccount the metrics-reader role is not bound to: known, and
	// refused.
	unbound, err := clientset.CoreV1().ServiceAccounts(operatorNS).CreateToken(ctx, "default",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	code, _, err := metrics.get(unbound.Status.Token)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusForbidden), "a scrape by a ServiceAccount without the metrics-reader role")
	running := map[string]string{"namespace": databaseNS, "engine": "postgres", "phase": "Running"}
	g.Eventually(func(g Gomega) {
		families := metrics.families(g)
		g.Expect(value(families, "dbpilot_databases", running)).To(Equal(1.0), "dbpilot_databases")
		passes := value(families, "dbpilot_reconcile_duration_seconds", map[string]string{"controller": "database", "result": "success"}) +
			value(families, "dbpilot_reconcile_duration_seconds", map[string]string{"controller": "database", "result": "requeue"})
		g.Expect(passes).To(BeNumerically(">", 0), "reconcile passes")
	}, time.Minute, time.Second).Should(Succeed())
	g.Eventually(func() (int, error) {
		session, err := connectApp(ctx, db)
		if err != nil {
			return 0, err
		}
		defer session.close()
		return session.queryInt(ctx, "SELECT 6 * 7")
	}, 10*time.Second, 200*time.Millisecond).Should(Equal(42))

	g.Expect(k8sClient.Delete(ctx, db)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db))
	}, 2*time.Minute, 500*time.Millisecond).Should(BeTrue(), "the OLM-installed operator finalizes the Database")
	g.Eventually(func(g Gomega) {
		g.Expect(value(metrics.families(g), "dbpilot_databases", running)).To(Equal(-1.0), "a deleted Database is no longer counted")
	}, time.Minute, time.Second).Should(Succeed())

	sub := object("operators.coreos.com/v1alpha1", "Subscription", operatorNS, "dbpilot", nil)
	g.Expect(k8sClient.Delete(ctx, sub)).To(Succeed())
	g.Expect(k8sClient.Delete(ctx, csv)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: "dbpilot-controller-manager"}, &appsv1.Deployment{}))
	}, 2*time.Minute, 500*time.Millisecond).Should(BeTrue(), "removing the CSV removes the operator")
}

// checkSecretAccess asks the API server what OLM granted the operator's
// ServiceAccount on Secrets: it may read and write them in the namespace of
// its Databases; unless it serves all namespaces (operatorNS "operators"),
// nowhere else and not cluster-wide.
func checkSecretAccess(g Gomega, operatorNS, databaseNS, account string) {
	can := func(verb, namespace string) bool {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + operatorNS + ":" + account,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNS, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: "secrets", Namespace: namespace},
		}}
		created, err := clientset.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), review, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return created.Status.Allowed
	}
	allNamespaces := operatorNS == "operators"
	for _, verb := range []string{"get", "list", "watch", "create", "patch"} {
		g.Expect(can(verb, databaseNS)).To(BeTrue(), "%s Secrets in %s, where its Databases are", verb, databaseNS)
		g.Expect(can(verb, "default")).To(Equal(allNamespaces), "%s Secrets in default (installed in %s)", verb, operatorNS)
		g.Expect(can(verb, "")).To(Equal(allNamespaces), "%s Secrets cluster-wide (installed in %s)", verb, operatorNS)
	}
}

func pushOLMImages(t *testing.T, ctx context.Context, root, bin string) {
	t.Helper()
	tools := localimages.OLMTools{
		OLM:             filepath.Join(bin, "olm-olm"),
		Catalog:         filepath.Join(bin, "olm-catalog"),
		CopyContent:     filepath.Join(bin, "olm-copy-content"),
		CPB:             filepath.Join(bin, "olm-cpb"),
		OPM:             filepath.Join(bin, "opm"),
		GRPCHealthProbe: filepath.Join(bin, "grpc_health_probe"),
	}
	cache := filepath.Join(root, "bin", "images")
	builds := map[string]func() (v1.Image, error){
		localimages.OLMImage:     func() (v1.Image, error) { return localimages.OLM(tools, cache) },
		localimages.OPMImage:     func() (v1.Image, error) { return localimages.OPM(tools, cache) },
		localimages.BundleImage:  func() (v1.Image, error) { return localimages.Bundle(filepath.Join(root, "bundle"), cache) },
		localimages.CatalogImage: func() (v1.Image, error) { return localimages.Catalog(tools, filepath.Join(root, "catalog"), cache) },
	}
	for name, build := range builds {
		img, err := build()
		if err != nil {
			t.Fatalf("building %s: %v", name, err)
		}
		if err := cluster.PushImage(ctx, name, img); err != nil {
			t.Fatal(err)
		}
	}
}

func object(apiVersion, kind, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	obj.SetNamespace(namespace)
	obj.SetName(name)
	if spec != nil {
		obj.Object["spec"] = spec
	}
	return obj
}

// apply server-side applies obj, retrying while the API server does not
// know its kind yet (freshly installed CRDs).
func apply(g Gomega, obj *unstructured.Unstructured) {
	g.Eventually(func() error {
		return k8sClient.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(obj.DeepCopy()),
			client.FieldOwner("dbpilot-tests"), client.ForceOwnership)
	}, 30*time.Second, 500*time.Millisecond).Should(Succeed(), "applying %s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
}

// applyFile applies every object of a multi-document YAML file.
func applyFile(g Gomega, path string) {
	f, err := os.Open(path)
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	decoder := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		obj := &unstructured.Unstructured{}
		err := decoder.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred(), "reading %s", path)
		if len(obj.Object) > 0 {
			apply(g, obj)
		}
	}
}

func waitDeploymentAvailable(g Gomega, namespace, name string) {
	g.Eventually(func() (int32, error) {
		d := &appsv1.Deployment{}
		err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, d)
		return d.Status.AvailableReplicas, err
	}, 3*time.Minute, 500*time.Millisecond).Should(BeNumerically(">=", 1), fmt.Sprintf("deployment %s/%s available", namespace, name))
}

// removeNamespaces deletes the namespaces and waits until their pods are
// gone (a namespace may stay Terminating while OLM's own objects are
// finalized; its pods go at once).
func removeNamespaces(t *testing.T, names ...string) {
	ctx := context.Background()
	for _, name := range names {
		if err := clientset.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", name, err)
		}
	}
	NewWithT(t).Eventually(func(g Gomega) {
		for _, name := range names {
			pods, err := clientset.CoreV1().Pods(name).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods.Items).To(BeEmpty(), "pods of namespace %s", name)
		}
	}, 3*time.Minute, time.Second).Should(Succeed())
}

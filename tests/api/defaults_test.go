package api_test

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestMinimalManifestsAreAccepted applies the manifests a new user writes
// first and expects them accepted with the documented defaults.
func TestMinimalManifestsAreAccepted(t *testing.T) {
	for i, spec := range []string{
		"  engine: postgres\n",
		"  engine: mysql\n",
		"  engine: mariadb\n",
		"  engine: mysql\n  version: \"8.4\"\n  replicas: 3\n  tier: large\n",
		"  engine: postgres\n  storage: {storageClassName: fast}\n",
		"  engine: postgres\n  backup: {schedule: \"@daily\"}\n",
	} {
		t.Run(fmt.Sprintf("%d", i), func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			obj := manifest(t, database(fmt.Sprintf("minimal-%d", i), spec))
			g.Expect(k8sClient.Create(ctx, obj)).To(Succeed(), "the API server rejected:\n%s", spec)
			t.Cleanup(func() { _ = k8sClient.Delete(ctx, obj) })
			size, _, _ := unstructured.NestedString(obj.Object, "spec", "storage", "size")
			g.Expect(size).To(Equal("10Gi"), "spec.storage.size defaults to 10Gi")
			deletion, _, _ := unstructured.NestedString(obj.Object, "spec", "deletionPolicy")
			g.Expect(deletion).To(Equal("Retain"))
			if _, has, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas"); has {
				replicas, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
				g.Expect(replicas).To(BeNumerically(">=", 1))
			}
			if _, has, _ := unstructured.NestedMap(obj.Object, "spec", "backup"); has {
				retention, _, _ := unstructured.NestedInt64(obj.Object, "spec", "backup", "retention")
				g.Expect(retention).To(BeEquivalentTo(7), "spec.backup.retention defaults to 7")
			}
		})
	}
}

// TestEveryMistakeIsReported checks that a manifest with several mistakes
// gets an error naming each of them, not just the first.
func TestEveryMistakeIsReported(t *testing.T) {
	g := NewWithT(t)
	spec := "  engine: postgres\n  version: \"9.6\"\n  autopilot: {mode: Auto, replicas: {min: 3, max: 2}}\n"
	err := k8sClient.Create(context.Background(), manifest(t, database("two-mistakes", spec)))
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("spec.version"), "the unsupported version is reported")
	g.Expect(err.Error()).To(ContainSubstring("spec.autopilot.replicas"), "the inverted bounds are reported")
}

// TestDatabaseBackupValidation accepts a minimal DatabaseBackup with its
// default deletionPolicy, and rejects a missing Database name and a change
// of the Database backed up.
func TestDatabaseBackupValidation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	backup := func(name, spec string) *unstructured.Unstructured {
		return manifest(t, fmt.Sprintf("apiVersion: dbpilot.io/v1alpha1\nkind: DatabaseBackup\nmetadata: {name: %s, namespace: default}\nspec:\n%s", name, spec))
	}
	obj := backup("nightly", "  databaseName: orders\n")
	g.Expect(k8sClient.Create(ctx, obj)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, obj) })
	policy, _, _ := unstructured.NestedString(obj.Object, "spec", "deletionPolicy")
	g.Expect(policy).To(Equal("Retain"), "a DatabaseBackup keeps its artifacts unless it says otherwise")

	err := k8sClient.Create(ctx, backup("nameless", "  deletionPolicy: Delete\n"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("spec.databaseName"))

	changed := backup("nightly", "  databaseName: billing\n")
	changed.SetResourceVersion(obj.GetResourceVersion())
	err = k8sClient.Update(ctx, changed)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("spec.databaseName is immutable"))
}

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

package localcluster_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/dbpilot/dbpilot/internal/localcluster"
)

// startCluster starts a control plane for one test and stops it in cleanup,
// keeping its logs when the test failed and checking no process is left.
func startCluster(t testing.TB) (*localcluster.Cluster, kubernetes.Interface) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{})
	if err != nil {
		t.Fatalf("starting control plane: %v", err)
	}
	t.Cleanup(func() {
		stop := c.Stop
		if t.Failed() {
			stop = c.StopKeepingLogs
			t.Logf("control plane logs kept in %s", c.LogDir())
		}
		if err := stop(); err != nil {
			t.Errorf("stopping control plane: %v", err)
		}
		if err := c.CheckStopped(); err != nil {
			t.Errorf("processes left running: %v", err)
		}
	})
	clientset, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatalf("creating clientset: %v", err)
	}
	return c, clientset
}

func statefulSet(namespace, name string, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "main", Image: "registry.example/none:1",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
}

// TestStatefulSetBecomesReadyWithBoundVolumes proves the harness runs real
// workloads: the StatefulSet controller creates pods, the scheduler binds them
// to kwok nodes, the provisioner and PV binder bind their claims, and kwok
// makes them Ready. Deleting the owner then shows garbage collection.
func TestStatefulSetBecomesReadyWithBoundVolumes(t *testing.T) {
	g := NewWithT(t)
	_, clientset := startCluster(t)
	ctx := context.Background()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "harness"}}
	_, err := clientset.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() error {
		_, err := clientset.CoreV1().ServiceAccounts("harness").Get(ctx, "default", metav1.GetOptions{})
		return err
	}, 30*time.Second).Should(Succeed())

	sts, err := clientset.AppsV1().StatefulSets("harness").Create(ctx, statefulSet("harness", "web", 3), metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func() int32 {
		got, err := clientset.AppsV1().StatefulSets("harness").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return -1
		}
		return got.Status.ReadyReplicas
	}, 2*time.Minute, 200*time.Millisecond).Should(Equal(int32(3)))

	for i := range 3 {
		claim, err := clientset.CoreV1().PersistentVolumeClaims("harness").Get(ctx, fmt.Sprintf("data-web-%d", i), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(claim.Status.Phase).To(Equal(corev1.ClaimBound), "claim %s", claim.Name)
		g.Expect(claim.Spec.StorageClassName).To(Equal(ptr.To(localcluster.StorageClassName)))
		pod, err := clientset.CoreV1().Pods("harness").Get(ctx, fmt.Sprintf("web-%d", i), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pod.Spec.NodeName).To(HavePrefix("kwok-node-"), "pod %s is scheduled", pod.Name)
	}

	// Garbage collection: a ConfigMap owned by the StatefulSet goes with it.
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "owned", Namespace: "harness",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))},
	}}
	_, err = clientset.CoreV1().ConfigMaps("harness").Create(ctx, owned, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(clientset.AppsV1().StatefulSets("harness").Delete(ctx, "web", metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(func() bool {
		_, err := clientset.CoreV1().ConfigMaps("harness").Get(ctx, "owned", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, time.Minute, 100*time.Millisecond).Should(BeTrue(), "owned ConfigMap is garbage-collected")
	g.Eventually(func() int {
		pods, err := clientset.CoreV1().Pods("harness").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return -1
		}
		return len(pods.Items)
	}, time.Minute, 100*time.Millisecond).Should(BeZero(), "pods are garbage-collected")
}

// TestStopLeavesNoProcess checks Stop ends every process and removes the
// temporary state directory.
func TestStopLeavesNoProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{Nodes: 1})
	if err != nil {
		t.Fatalf("starting control plane: %v", err)
	}
	if len(c.PIDs()) != 5 {
		t.Errorf("expected 5 processes (etcd, apiserver, controller-manager, scheduler, kwok), got %d", len(c.PIDs()))
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	if err := c.CheckStopped(); err != nil {
		t.Errorf("processes left running: %v", err)
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("state directory %s still exists (stat: %v)", c.Dir, err)
	}
}

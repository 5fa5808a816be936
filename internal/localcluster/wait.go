package localcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// waitHTTP polls url until it answers 200, failing early when p exits.
func waitHTTP(ctx context.Context, p *process, url string, client *http.Client, timeout time.Duration) error {
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Second}
	}
	return poll(ctx, p, timeout, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// waitAPIServer polls /readyz with admin credentials.
func waitAPIServer(ctx context.Context, p *process, config *rest.Config, timeout time.Duration) error {
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	return poll(ctx, p, timeout, func(ctx context.Context) (bool, error) {
		body, err := clientset.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}

// poll runs condition every 100 ms until it is done, p exits or time runs out.
func poll(ctx context.Context, p *process, timeout time.Duration, condition wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if p != nil && !p.running() {
			return false, fmt.Errorf("%s exited: %v (see %s)", p.name, p.err, p.logPath)
		}
		return condition(ctx)
	})
}

// waitReady waits until the controller manager and scheduler are healthy, the
// default ServiceAccount exists (so pods are admitted), every fake node is
// Ready and the default StorageClass is in place.
func (c *Cluster) waitReady(ctx context.Context, clientset *kubernetes.Clientset, kcmPort, schedPort int) error {
	insecure := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		// The components serve /healthz with self-signed certificates.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe of a local test process
	}}
	byName := map[string]*process{}
	for _, p := range c.processes {
		byName[p.name] = p
	}
	if err := waitHTTP(ctx, byName["kube-controller-manager"], fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort), insecure, 60*time.Second); err != nil {
		return fmt.Errorf("kube-controller-manager not healthy: %w", err)
	}
	if err := waitHTTP(ctx, byName["kube-scheduler"], fmt.Sprintf("https://127.0.0.1:%d/healthz", schedPort), insecure, 60*time.Second); err != nil {
		return fmt.Errorf("kube-scheduler not healthy: %w", err)
	}
	if err := poll(ctx, byName["kube-controller-manager"], 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := clientset.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("default ServiceAccount never created: %w", err)
	}
	if err := poll(ctx, byName["kwok"], 60*time.Second, func(ctx context.Context) (bool, error) {
		nodes, err := clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, node := range nodes.Items {
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= c.cfg.Nodes, nil
	}); err != nil {
		return fmt.Errorf("fake nodes not Ready: %w", err)
	}
	return poll(ctx, nil, 30*time.Second, func(ctx context.Context) (bool, error) {
		classes, err := clientset.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		return hasDefaultClass(classes.Items), nil
	})
}

func hasDefaultClass(classes []storagev1.StorageClass) bool {
	for _, class := range classes {
		if class.Annotations[defaultClassAnnotation] == "true" {
			return true
		}
	}
	return false
}

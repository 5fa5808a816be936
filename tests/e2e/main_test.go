// Package e2e_test runs the operator against the real local control plane
// (etcd, kube-apiserver, controller-manager, scheduler, kwok) and checks the
// state of the world: Databases, their children, pods and volumes.
package e2e_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dbpilot/dbpilot/internal/localcluster"
	"github.com/dbpilot/dbpilot/internal/options"
)

var (
	restConfig *rest.Config
	k8sClient  client.Client
	clientset  kubernetes.Interface
	// kubeconfigPath is the control plane's administrator kubeconfig, for
	// the tests that run kubectl.
	kubeconfigPath string
	// cluster is the local control plane, for the test that restarts its
	// components.
	cluster *localcluster.Cluster
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The CRDs go in before the controller manager starts, so its garbage
	// collector knows Databases from the first test on.
	c, err := localcluster.Start(ctx, localcluster.Config{BeforeControllers: localcluster.InstallRepositoryCRDs})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting control plane: %v\n", err)
		return 1
	}
	code = 1
	defer c.StopAfterTests(&code)
	restConfig, kubeconfigPath, cluster = c.RESTConfig, c.KubeconfigPath, c
	scheme, err := options.Scheme()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if k8sClient, err = client.New(restConfig, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if clientset, err = kubernetes.NewForConfig(restConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// Package scale_test measures how many Databases one operator holds: the
// manager binary, under its own ServiceAccount and least-privilege role,
// converges N Databases on the local control plane (kwok nodes), next to a
// raw client that creates the same children with no operator. `make
// bench-scale N=1000`.
package scale_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
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

// countEnv sets N, the number of Databases (default 100).
const countEnv = "DBPILOT_SCALE_N"

// benchNamespace holds the ServiceAccounts the operator and the raw client
// run as; the audit policy records exactly their requests.
const benchNamespace = "dbpilot-scale"

// The two identities whose requests the API server's audit log records.
const (
	operatorAccount = "operator"
	rawAccount      = "raw-client"
)

var (
	restConfig *rest.Config
	k8sClient  client.Client
	clientset  kubernetes.Interface
	cluster    *localcluster.Cluster
	// databaseCount is N.
	databaseCount int
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	n, err := countFromEnvironment()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	databaseCount = n
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{
		Nodes:             nodesFor(n),
		AuditPolicy:       auditPolicy(),
		BeforeControllers: localcluster.InstallRepositoryCRDs,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting control plane: %v\n", err)
		return 1
	}
	code = 1
	defer c.StopAfterTests(&code)
	cluster, restConfig = c, c.RESTConfig
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

// countFromEnvironment reads N.
func countFromEnvironment() (int, error) {
	value := os.Getenv(countEnv)
	if value == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(value)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a positive number of Databases", countEnv, value)
	}
	return n, nil
}

// podsPerNode is how many of the benchmark's pods a kwok node holds: the
// small tier requests half a CPU, a node has 32.
const podsPerNode = 60

// nodesFor gives room for both runs' pods (one per Database each) with a
// node to spare.
func nodesFor(n int) int {
	return (2*n+podsPerNode-1)/podsPerNode + 1
}

// auditPolicy records, at the Metadata level and once per request, what
// the operator and the raw client ask of the API server, and nothing else.
func auditPolicy() string {
	return fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["%s", "%s"]
- level: None
`, serviceAccountUser(operatorAccount), serviceAccountUser(rawAccount))
}

// serviceAccountUser is the user name the API server gives a
// ServiceAccount of the bench namespace.
func serviceAccountUser(account string) string {
	return "system:serviceaccount:" + benchNamespace + ":" + account
}

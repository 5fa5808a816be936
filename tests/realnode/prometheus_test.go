package realnode_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/autopilot/promsource"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/localcluster"
	"github.com/dbpilot/dbpilot/internal/promserver"
)

// scrapeConfigs are the Prometheus jobs of a cluster with dbpilot, as the
// Prometheus Operator renders config/prometheus (the databases' PodMonitor,
// rendered from the shipped file, and the operator's ServiceMonitor) and the
// kubelet's usual monitors: the
// database pods' engine metrics with the namespace's token, the kubelet's
// cAdvisor and volume stats with a client certificate, and the operator's
// authenticated endpoint with a ServiceAccount token. Pods and nodes are
// discovered from the API server with Kubernetes discovery's labels
// (served over http_sd: Debian's Prometheus is built without it).
func scrapeConfigs(g Gomega, discovery, namespace, dbToken, operatorToken string) string {
	cert, key, _ := cluster.AdminCertificate()
	return podMonitorJob(g, discovery, namespace, dbToken) + fmt.Sprintf(`- job_name: kubelet-cadvisor
  scheme: https
  metrics_path: /metrics/cadvisor
  tls_config: {insecure_skip_verify: true, cert_file: %[2]s, key_file: %[3]s}
  http_sd_configs:
  - {url: '%[1]s/nodes', refresh_interval: 30s}
- job_name: kubelet
  scheme: https
  tls_config: {insecure_skip_verify: true, cert_file: %[2]s, key_file: %[3]s}
  http_sd_configs:
  - {url: '%[1]s/nodes', refresh_interval: 30s}
- job_name: dbpilot-operator
  scheme: https
  honor_labels: true
  tls_config: {insecure_skip_verify: true}
  authorization: {credentials_file: %[4]s}
  static_configs:
  - targets: ['%[5]s']
`, discovery, cert, key, operatorToken, operatorMetricsAddress)
}

// prometheusScraper makes the ServiceAccount a Prometheus scrapes the
// operator as (allowed to get /metrics, as the bundle's metrics-reader
// role allows) and writes a token of it, and the namespace's metrics
// token, to files.
func prometheusScraper(t *testing.T, g Gomega, namespace string) (dbTokenFile, operatorTokenFile string) {
	ctx := context.Background()
	dir := t.TempDir()
	secret := &corev1.Secret{}
	g.Eventually(func() error {
		return k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: dbpilotv1alpha1.MetricsSecretName}, secret)
	}, time.Minute, time.Second).Should(Succeed())
	dbTokenFile = filepath.Join(dir, "database-token")
	g.Expect(os.WriteFile(dbTokenFile, secret.Data[layout.KeyMetricsToken], 0o600)).To(Succeed())

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "prometheus"}}
	g.Expect(k8sClient.Create(ctx, sa)).To(Succeed())
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: namespace + "-metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: namespace + "-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: sa.Name}},
	}
	for _, obj := range []client.Object{role, binding} {
		g.Expect(k8sClient.Create(ctx, obj)).To(Succeed())
		t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), obj) })
	}
	token, err := clientset.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	operatorTokenFile = filepath.Join(dir, "operator-token")
	g.Expect(os.WriteFile(operatorTokenFile, []byte(token.Status.Token), 0o600)).To(Succeed())
	return dbTokenFile, operatorTokenFile
}

// startPrometheus runs a real Prometheus scraping the cluster as
// scrapeConfigs says, every 5 s; stopped with the test.
func startPrometheus(t *testing.T, g Gomega, namespace string) *promserver.Server {
	dbToken, operatorToken := prometheusScraper(t, g, namespace)
	discovery, err := promserver.StartKubernetesDiscovery(clientset)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = discovery.Stop() })
	server, err := promserver.Start(context.Background(), promserver.Config{
		ScrapeInterval: 5 * time.Second,
		ScrapeConfigs:  scrapeConfigs(g, discovery.URL, namespace, dbToken, operatorToken),
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if t.Failed() {
			if log, err := os.ReadFile(filepath.Join(server.Dir, "prometheus.log")); err == nil {
				t.Logf("prometheus log:\n%s", lastLines(string(log), 30))
			}
			logTargets(t, server)
		}
		if err := server.Stop(); err != nil {
			t.Errorf("stopping prometheus: %v", err)
		}
	})
	return server
}

// logTargets logs each scrape target's health and last error.
func logTargets(t *testing.T, server *promserver.Server) {
	c, err := promapi.NewClient(promapi.Config{Address: server.URL})
	if err != nil {
		return
	}
	targets, err := promv1.NewAPI(c).Targets(context.Background())
	if err != nil {
		t.Logf("prometheus targets: %v", err)
		return
	}
	for _, target := range targets.Active {
		t.Logf("target %s %s: %s %s", target.ScrapePool, target.ScrapeURL, target.Health, target.LastError)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// prometheusAPI is a client of the server's HTTP API.
func prometheusAPI(g Gomega, server *promserver.Server) promv1.API {
	c, err := promapi.NewClient(promapi.Config{Address: server.URL})
	g.Expect(err).NotTo(HaveOccurred())
	return promv1.NewAPI(c)
}

// query runs an instant query against the server.
func query(g Gomega, server *promserver.Server, promQL string) model.Vector {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	value, _, err := prometheusAPI(g, server).Query(ctx, promQL, time.Now())
	g.Expect(err).NotTo(HaveOccurred(), "query %s", promQL)
	vector, ok := value.(model.Vector)
	g.Expect(ok).To(BeTrue(), "query %s returned a %s", promQL, value.Type())
	return vector
}

// databaseAlerts are the expressions of the alerts about databases, from
// config/prometheus/rules.yaml, but those that depend on the machine's
// disk (the real node's volumes are directories of the host's filesystem).
func databaseAlerts(g Gomega) map[string]string {
	root, err := localcluster.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "config", "prometheus", "rules.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var rules struct {
		Spec struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	g.Expect(yaml.Unmarshal(data, &rules)).To(Succeed())
	alerts := map[string]string{}
	for _, group := range rules.Spec.Groups {
		for _, r := range group.Rules {
			if group.Name == "dbpilot.databases" && !strings.HasPrefix(r.Alert, "Storage") {
				alerts[r.Alert] = r.Expr
			}
		}
	}
	g.Expect(alerts).To(HaveKey("DatabaseDown"))
	return alerts
}

// TestPrometheusReadsTheDatabases runs a PostgreSQL Database of two pods
// and a MariaDB one of one pod, and a real Prometheus that finds them
// through the API server and scrapes their engine metrics (with the
// namespace's token), the kubelet's cAdvisor and the operator. The
// auto-pilot's own queries (promsource) then return every pod's CPU,
// memory, connections, writes and volume; the targets carry the database,
// role and engine labels; no database alert fires on healthy Databases;
// and the operator's series count the Databases it runs.
func TestPrometheusReadsTheDatabases(t *testing.T) {
	besideOtherTests(t, 1500) // three small pods
	g := NewWithT(t)
	ctx := context.Background()
	ns := "real-metrics"
	restrictedNamespace(t, ns)
	orders := newDatabase(ns, "orders", dbpilotv1alpha1.EnginePostgres, "15", 2)
	carts := newDatabase(ns, "carts", dbpilotv1alpha1.EngineMariaDB, "10.11", 1)
	for _, db := range []*dbpilotv1alpha1.Database{orders, carts} {
		g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
		t.Cleanup(func() { deleteAndWait(NewWithT(t), db) })
	}
	for _, db := range []*dbpilotv1alpha1.Database{orders, carts} {
		t.Logf("%s Available in %.0fs", db.Name, waitAvailable(g, db, 5*time.Minute).Seconds())
	}
	// Neither Database's pods can act on the other's instances.
	expectActionsRefused(g, orders, carts)
	expectActionsRefused(g, carts, orders)
	server := startPrometheus(t, g, ns)

	source, err := promsource.New(promsource.Options{URL: server.URL, RateWindow: autopilotRateWindow})
	g.Expect(err).NotTo(HaveOccurred())
	tables := map[*dbpilotv1alpha1.Database]replicationSQL{orders: replicationEngines[0], carts: replicationEngines[1]}
	sessions := map[*dbpilotv1alpha1.Database]sqlSession{}
	for db, tc := range tables {
		// The Service's rules may trail the Database's Available.
		var session sqlSession
		g.Eventually(func() error {
			var err error
			if session, err = connectApp(ctx, db); err != nil {
				return errors.New(err.Error()) // its text holds no password
			}
			return nil
		}, time.Minute, time.Second).Should(Succeed())
		t.Cleanup(session.close)
		g.Expect(session.exec(ctx, tc.create)).To(Succeed())
		sessions[db] = session
	}
	pods := []promsource.PodKey{{Namespace: ns, Pod: "orders-0"}, {Namespace: ns, Pod: "orders-1"}, {Namespace: ns, Pod: "carts-0"}}
	primaries := map[promsource.PodKey]bool{pods[0]: true, pods[2]: true}
	next := 2000
	began := time.Now()
	var snap promsource.Snapshot
	g.Eventually(func(g Gomega) {
		// Writes keep coming, so the primaries' write rates are not 0.
		for db, session := range sessions {
			statement := fmt.Sprintf("INSERT INTO orders VALUES (%d)", next)
			next++
			g.Expect(session.exec(ctx, statement)).To(Succeed(), "writing into %s", db.Name)
		}
		snap, err = source.Snapshot(ctx, time.Now())
		g.Expect(err).NotTo(HaveOccurred())
		for _, pod := range pods {
			m, ok := snap.Pods[pod]
			g.Expect(ok).To(BeTrue(), "no CPU series of %s yet: %v", pod.Pod, snap.Pods)
			g.Expect(m.CPUCores).To(BeNumerically(">", 0), "%s CPU", pod.Pod)
			g.Expect(m.MemoryBytes).To(BeNumerically(">", 1<<20), "%s memory", pod.Pod)
			g.Expect(m.MaxConnections).To(BeNumerically(">=", 10), "%s max connections", pod.Pod)
			g.Expect(m.VolumeUsedShare).To(BeNumerically(">", 0), "%s volume", pod.Pod)
			if primaries[pod] {
				g.Expect(m.Connections).To(BeNumerically(">=", 1), "%s connections", pod.Pod)
				g.Expect(m.WriteRate).To(BeNumerically(">", 0), "%s writes", pod.Pod)
			} else {
				// Nobody reads from the replica: the instance
				// program's own queries do not count as load.
				g.Expect(m.ReadRate).To(BeNumerically("<", 5), "%s reads with no reader", pod.Pod)
			}
		}
	}, 3*time.Minute, 5*time.Second).Should(Succeed())
	t.Logf("the auto-pilot's queries return every pod %.0fs after Prometheus started:", time.Since(began).Seconds())
	for _, pod := range pods {
		m := snap.Pods[pod]
		t.Logf("  %s: cpu %.3f cores, memory %.0f MiB, connections %.0f/%.0f, reads %.1f/s, writes %.1f/s, lag %.1fs, volume %.1f%%",
			pod.Pod, m.CPUCores, m.MemoryBytes/(1<<20), m.Connections, m.MaxConnections, m.ReadRate, m.WriteRate, m.LagSeconds, 100*m.VolumeUsedShare)
	}

	// The targets carry the labels the alerts and dashboards group by.
	roles := map[string]string{}
	for _, sample := range query(g, server, `up{job="dbpilot-databases"}`) {
		g.Expect(float64(sample.Value)).To(Equal(1.0), "target %v is down", sample.Metric)
		roles[string(sample.Metric["pod"])] = string(sample.Metric["database"]) + "/" + string(sample.Metric["engine"]) + "/" + string(sample.Metric["role"])
	}
	g.Expect(roles).To(Equal(map[string]string{
		"orders-0": "orders/postgres/primary", "orders-1": "orders/postgres/replica", "carts-0": "carts/mariadb/primary",
	}))
	// Healthy Databases fire no alert, and each expression runs (the
	// operator's series cover the Databases of the tests beside this one
	// too: only this namespace's count).
	for name, expr := range databaseAlerts(g) {
		var firing model.Vector
		for _, sample := range query(g, server, expr) {
			if string(sample.Metric["namespace"]) == ns {
				firing = append(firing, sample)
			}
		}
		g.Expect(firing).To(BeEmpty(), "alert %s would fire", name)
	}
	// The replica streams, and says so.
	g.Expect(query(g, server, `dbpilot_instance_replica_streaming{pod="orders-1"} == 1`)).To(HaveLen(1))

	// The operator's series, scraped from its authenticated endpoint.
	g.Eventually(func(g Gomega) {
		running := query(g, server, fmt.Sprintf(`dbpilot_databases{namespace=%q, phase="Running"}`, ns))
		byEngine := map[string]float64{}
		for _, sample := range running {
			byEngine[string(sample.Metric["engine"])] = float64(sample.Value)
		}
		g.Expect(byEngine).To(Equal(map[string]float64{"postgres": 1, "mariadb": 1}))
		passes := query(g, server, `sum(dbpilot_reconcile_duration_seconds_count{controller="database"})`)
		g.Expect(passes).To(HaveLen(1))
		g.Expect(float64(passes[0].Value)).To(BeNumerically(">=", 2), "reconcile passes")
	}, time.Minute, 5*time.Second).Should(Succeed())
}

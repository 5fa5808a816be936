package realnode_test

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// replicationSQL is what the test runs on each engine.
type replicationSQL struct {
	engine    dbpilotv1alpha1.Engine
	version   string
	create    string // a table orders of ids 1..1000
	more      string // ids 1001..2000
	more3     string // ids 2001..3000
	slotOf3   string // PostgreSQL: 1 while the primary keeps the slot of ordinal 3
	isReplica string // 1 on a read-only replica
	sum       string
}

var replicationEngines = []replicationSQL{
	{
		engine: dbpilotv1alpha1.EnginePostgres, version: "15",
		create:    "CREATE TABLE orders AS SELECT g AS id FROM generate_series(1, 1000) g",
		more:      "INSERT INTO orders SELECT g FROM generate_series(1001, 2000) g",
		more3:     "INSERT INTO orders SELECT g FROM generate_series(2001, 3000) g",
		slotOf3:   "SELECT count(*)::int FROM pg_replication_slots WHERE slot_name = 'orders_3'",
		isReplica: "SELECT pg_is_in_recovery()::int",
		sum:       "SELECT coalesce(sum(id), 0)::int FROM orders",
	},
	{
		engine: dbpilotv1alpha1.EngineMariaDB, version: "10.11",
		create:    "CREATE TABLE orders (id INT PRIMARY KEY) AS SELECT seq AS id FROM seq_1_to_1000",
		more:      "INSERT INTO orders SELECT seq FROM seq_1001_to_2000",
		more3:     "INSERT INTO orders SELECT seq FROM seq_2001_to_3000",
		isReplica: "SELECT @@read_only",
		sum:       "SELECT CAST(COALESCE(SUM(id), 0) AS SIGNED) FROM orders",
	},
}

// TestReplicasServeReads runs a Database of each engine with three pods on
// the real node, TLS and the application user's client certificate
// required, serving the platform team's own certificate
// (an RSA one, its key in PKCS #1, signed by an intermediate that follows
// it in tls.crt, as cert-manager writes it): MariaDB from the start,
// PostgreSQL switched to it from dbpilot's while running, without a
// restart. Rows written through the -rw Service are
// read back from every replica (each session presenting the client
// certificate dbpilot issued), and a session without TLS, or without the
// certificate, is refused;
// scaling 3 -> 4 clones a replica that catches up (the node's 2 CPUs hold
// four pods of the small tier's 500m requests); a deleted replica pod
// rejoins from its volume without a re-clone; scaling down keeps the
// primary and every volume, and scaling up again brings the replica back
// on its volume; status.instances tells the truth at each step; a user
// added to spec.users reads the rows through the -ro Service, with no pod
// restarted, and writes none, and once removed its session on a replica
// ends and it logs in nowhere; and the replication, monitoring and users'
// passwords appear in no log, Event or status.
func TestReplicasServeReads(t *testing.T) {
	for _, tc := range replicationEngines {
		t.Run(string(tc.engine), func(t *testing.T) { testReplicasServeReads(t, tc) })
	}
}

func testReplicasServeReads(t *testing.T, tc replicationSQL) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "real-replicas-" + string(tc.engine)
	restrictedNamespace(t, ns)
	db := newDatabase(ns, "orders", tc.engine, tc.version, 3)
	db.Spec.TLS = &dbpilotv1alpha1.TLSSpec{Required: true, ClientCertificateRequired: true}
	// PostgreSQL switches to the platform team's certificate while it
	// runs (the kubelet updates the mounted Secret in steps); MariaDB
	// serves it from the start.
	switches := tc.engine == dbpilotv1alpha1.EnginePostgres
	if !switches {
		db.Spec.TLS.ServerCertificateSecretName = "orders-cert"
		createProvidedCertificate(g, db, "orders-cert")
	}
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	// Even when the test fails: the next engine's pods need the CPU.
	t.Cleanup(func() { deleteAndWait(NewWithT(t), db) })
	logPodsOnFailure(t, db)
	start := time.Now()
	waitReadyPods(g, db, 3)
	t.Logf("%s: a primary and 2 replicas ready in %.1fs", tc.engine, time.Since(start).Seconds())
	expectInstances(g, db, 3)

	var writer sqlSession
	g.Eventually(func() (err error) {
		writer, err = connectApp(ctx, db)
		return err
	}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
	defer writer.close()
	g.Expect(writer.exec(ctx, tc.create)).To(Succeed())
	// Through the -ro Service, and from each replica.
	g.Eventually(func(g Gomega) int { return readReplica(g, db, tc, "") }, 30*time.Second, 500*time.Millisecond).Should(Equal(500500))
	expectEveryReplica(g, db, tc, 3, 500500)
	expectReplicationOverTLS(g, db, 3)
	expectSessionWithoutTLSRefused(g, db)
	expectPasswordAloneRefused(g, db)
	userPassword := expectManagedUserReads(t, g, db, tc, 500500)
	if switches {
		switchToProvidedCertificate(t, g, db)
	}
	replaceClientAuthority(t, g, db, 3)

	scale(g, db, 4)
	start = time.Now()
	waitReadyPods(g, db, 4)
	t.Logf("%s: scaled 3 -> 4: the new replica cloned and replicates after %.1fs", tc.engine, time.Since(start).Seconds())
	expectInstances(g, db, 4)
	g.Expect(writer.exec(ctx, tc.more)).To(Succeed())
	expectEveryReplica(g, db, tc, 4, 2001000)
	// The new replica's stream too: (PostgreSQL) verified against the
	// user's certificate from its clone on.
	expectReplicationOverTLS(g, db, 4)

	// A deleted replica pod comes back on its volume and replicates again,
	// without cloning the primary anew.
	old, err := clientset.CoreV1().Pods(ns).Get(ctx, db.PodName(1), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(clientset.CoreV1().Pods(ns).Delete(ctx, old.Name, metav1.DeleteOptions{})).To(Succeed())
	start = time.Now()
	g.Eventually(func(g Gomega) {
		pod, err := clientset.CoreV1().Pods(ns).Get(ctx, old.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pod.UID).NotTo(Equal(old.UID))
		g.Expect(podIsReady(pod)).To(BeTrue())
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
	t.Logf("%s: a deleted replica pod rejoined in %.1fs", tc.engine, time.Since(start).Seconds())
	log := podLog(g, ns, old.Name, databaseContainer)
	g.Expect(log).NotTo(ContainSubstring(bootstrapMessage), "the replica cloned again:\n%s", log)
	g.Expect(writer.exec(ctx, tc.more3)).To(Succeed())
	expectEveryReplica(g, db, tc, 4, 4501500)

	scale(g, db, 3)
	g.Eventually(func(g Gomega) {
		pods, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.FormatLabels(db.SelectorLabels())})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods.Items).To(HaveLen(3))
	}, 2*time.Minute, 500*time.Millisecond).Should(Succeed())
	waitReadyPods(g, db, 3)
	expectInstances(g, db, 3)
	for i := range 4 {
		_, err := clientset.CoreV1().PersistentVolumeClaims(ns).Get(ctx, db.ClaimName(i), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred(), "the volume of ordinal %d after scaling down", i)
	}
	g.Expect(writer.queryInt(ctx, tc.sum)).To(Equal(4501500), "the primary after scaling down")
	if tc.slotOf3 != "" {
		// The slot of the replica scaled away is dropped, so the primary
		// frees its WAL.
		g.Eventually(func() (int, error) { return writer.queryInt(ctx, tc.slotOf3) }, 2*time.Minute, time.Second).Should(Equal(0))
	}
	// Back to 4: the replica of ordinal 3 returns on its kept volume (a
	// PostgreSQL one, its slot gone, clones again) and catches up.
	scale(g, db, 4)
	start = time.Now()
	waitReadyPods(g, db, 4)
	t.Logf("%s: scaled 3 -> 4 again: the replica on the kept volume caught up after %.1fs", tc.engine, time.Since(start).Seconds())
	expectEveryReplica(g, db, tc, 4, 4501500)

	expectNoInternalPasswords(g, db, userPassword)
	expectUnprivilegedProcesses(g, db)
}

// scale sets spec.replicas.
func scale(g Gomega, db *dbpilotv1alpha1.Database, replicas int32) {
	g.Eventually(func() error {
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(db), db); err != nil {
			return err
		}
		db.Spec.Replicas = ptr.To(replicas)
		return k8sClient.Update(context.Background(), db)
	}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
}

// switchToProvidedCertificate moves the running Database to the platform
// team's own certificate (cert-manager's Secret for an intermediate issuer
// of theirs): once the kubelet has updated the mounted Secret, every pod
// serves it, verified against its ca.crt (the root, through the
// intermediate the engines serve with it), with no pod, container or
// PostgreSQL server restarted; the replicas, the clients and the operator
// verify it from then on.
func switchToProvidedCertificate(t *testing.T, g Gomega, db *dbpilotv1alpha1.Database) {
	ctx := context.Background()
	before, started := podRestarts(g, db), postmasterStarts(g, db)
	createProvidedCertificate(g, db, "orders-cert")
	// Watched from before the switch, so every version of the pods'
	// Secret is seen.
	trust := watchTrust(db)
	defer trust.stop()
	g.Eventually(func() error {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db); err != nil {
			return err
		}
		db.Spec.TLS.ServerCertificateSecretName = "orders-cert"
		return k8sClient.Update(ctx, db)
	}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
	start := time.Now()
	waitServingProvidedCertificate(g, db, 5*time.Minute)
	t.Logf("%s: every pod serves the user's certificate %.1fs after the switch", db.Spec.Engine, time.Since(start).Seconds())
	waitFormerAuthorityRetired(g, db, "orders-cert")
	seen := trust.stop()
	t.Logf("%s: the former authority retired %.1fs after the switch; %d rounds over every pod: %d verifications of a served certificate, %d failed",
		db.Spec.Engine, time.Since(start).Seconds(), seen.rounds, seen.verified, seen.failed)
	g.Expect(seen.failures).To(BeEmpty(), "while the certificate changed, a pod served one that the pods' Secret or another pod's mounted authorities did not verify")
	g.Expect(seen.versions).To(Equal(3), "the pods' Secret trusted dbpilot's authority, both, then the user's")
	g.Expect(seen.fewestPods).To(Equal(int(*db.Spec.Replicas)), "every round checked every pod")
	g.Eventually(func(g Gomega) {
		g.Expect(eventNote(g, db.Namespace, dbpilotv1alpha1.EventReasonCertificateAuthorityAdded)).To(Equal(
			"Secret orders-tls trusts the new certificate's authorities beside the former ones; the certificate follows once every pod has them"))
		g.Expect(eventNote(g, db.Namespace, dbpilotv1alpha1.EventReasonCertificateCopied)).To(Equal(
			"Copied the server certificate of Secret orders-cert into Secret orders-tls"))
		g.Expect(eventNote(g, db.Namespace, dbpilotv1alpha1.EventReasonCertificateAuthorityRetired)).To(Equal(
			"Every pod serves the certificate in Secret orders-tls: it trusts only that certificate's authorities now"))
	}, 30*time.Second, time.Second).Should(Succeed())
	g.Expect(eventNote(g, db.Namespace, dbpilotv1alpha1.EventReasonCertificateStagingTimedOut)).To(BeEmpty(), "no step went on without a pod")
	g.Expect(podRestarts(g, db)).To(Equal(before), "no pod restarted for the new certificate")
	g.Expect(postmasterStarts(g, db)).To(Equal(started), "no PostgreSQL server restarted for the new certificate")
}

// waitServingProvidedCertificate waits until every pod of db serves the
// user's certificate: an application session to each verifies it.
func waitServingProvidedCertificate(g Gomega, db *dbpilotv1alpha1.Database, timeout time.Duration) {
	for i := range int(*db.Spec.Replicas) {
		g.Eventually(func() error {
			session, err := connectAppToPod(context.Background(), db, db.PodName(i))
			if err == nil {
				session.close()
			}
			return err
		}, timeout, time.Second).Should(Succeed(), "%s serves the user's certificate", db.PodName(i))
	}
}

// waitFormerAuthorityRetired waits until the pods' Secret trusts the ca.crt
// of the user's Secret provided alone: the former authority is dropped once
// every pod serves the new certificate.
func waitFormerAuthorityRetired(g Gomega, db *dbpilotv1alpha1.Database, provided string) {
	ctx := context.Background()
	user := &corev1.Secret{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: provided}, user)).To(Succeed())
	g.Eventually(func(g Gomega) []byte {
		served := &corev1.Secret{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.ServerCertificateSecretName()}, served)).To(Succeed())
		return served.Data[layout.KeyCACert]
	}, time.Minute, time.Second).Should(Equal(user.Data[layout.KeyCACert]), "the former authority retired")
}

// postmasterStarts is when each pod's PostgreSQL server started, in
// seconds since the epoch.
func postmasterStarts(g Gomega, db *dbpilotv1alpha1.Database) map[string]int {
	ctx := context.Background()
	starts := map[string]int{}
	for i := range int(*db.Spec.Replicas) {
		session, err := connectAppToPod(ctx, db, db.PodName(i))
		g.Expect(err).NotTo(HaveOccurred())
		started, err := session.queryInt(ctx, "SELECT extract(epoch FROM pg_postmaster_start_time())::int")
		session.close()
		g.Expect(err).NotTo(HaveOccurred())
		starts[db.PodName(i)] = started
	}
	return starts
}

// podRestarts is each pod's UID and its containers' restarts.
func podRestarts(g Gomega, db *dbpilotv1alpha1.Database) map[string]int32 {
	pods, err := clientset.CoreV1().Pods(db.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: labels.FormatLabels(db.SelectorLabels())})
	g.Expect(err).NotTo(HaveOccurred())
	restarts := map[string]int32{}
	for _, pod := range pods.Items {
		for _, status := range pod.Status.ContainerStatuses {
			restarts[string(pod.UID)+"/"+status.Name] = status.RestartCount
		}
	}
	return restarts
}

// readReplica reads the sum from a read-only replica: through the -ro
// Service when pod is "", else from that pod.
func readReplica(g Gomega, db *dbpilotv1alpha1.Database, tc replicationSQL, pod string) int {
	ctx := context.Background()
	var reader sqlSession
	var err error
	if pod == "" {
		reader, err = connectAppThrough(ctx, db, db.ReadOnlyServiceName())
	} else {
		reader, err = connectAppToPod(ctx, db, pod)
	}
	g.Expect(err).NotTo(HaveOccurred())
	defer reader.close()
	replica, err := reader.queryInt(ctx, tc.isReplica)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replica).To(Equal(1), "a read-only replica")
	sum, err := reader.queryInt(ctx, tc.sum)
	g.Expect(err).NotTo(HaveOccurred())
	return sum
}

// expectEveryReplica waits until each replica of ordinals 1..n-1 has sum.
func expectEveryReplica(g Gomega, db *dbpilotv1alpha1.Database, tc replicationSQL, n, sum int) {
	for i := 1; i < n; i++ {
		g.Eventually(func(g Gomega) int { return readReplica(g, db, tc, db.PodName(i)) },
			30*time.Second, 500*time.Millisecond).Should(Equal(sum), "replica %s", db.PodName(i))
	}
}

// expectInstances waits until status.instances lists n pods, ordinal 0 the
// primary and the others streaming replicas with no lag (the test writes
// nothing meanwhile), and status.currentPrimary names ordinal 0.
func expectInstances(g Gomega, db *dbpilotv1alpha1.Database, n int) {
	want := []dbpilotv1alpha1.InstanceStatus{{Name: db.PodName(0), Role: "primary", Ready: true}}
	for i := 1; i < n; i++ {
		want = append(want, dbpilotv1alpha1.InstanceStatus{Name: db.PodName(i), Role: "replica", Ready: true, Replicating: true, LagSeconds: ptr.To[int64](0)})
	}
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.CurrentPrimary).To(Equal(db.PodName(0)))
		g.Expect(db.Status.Instances).To(ConsistOf(want))
	}, time.Minute, 500*time.Millisecond).Should(Succeed())
}

// waitReadyPods waits until the Database reports n ready pods.
func waitReadyPods(g Gomega, db *dbpilotv1alpha1.Database, n int32) {
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.ReadyReplicas).To(Equal(n), "ready pods")
		g.Expect(available(db)).To(BeTrue())
	}, 4*time.Minute, 500*time.Millisecond).Should(Succeed())
}

// caughtUpReplica matches the status of the replica name that is ready and
// streams with no lag, whatever else it reports (settings pending a
// restart after a tier grown in place, for one).
func caughtUpReplica(name string) types.GomegaMatcher {
	return And(HaveField("Name", name), HaveField("Role", "replica"), HaveField("Ready", true),
		HaveField("Replicating", true), HaveField("LagSeconds", HaveValue(BeZero())))
}

// expectReplicationOverTLS expects every replica of the Database's pods to
// replicate over TLS: PostgreSQL's WAL senders on the primary run over TLS
// (asked as the superuser through -rw); MariaDB's replicas report
// Master_SSL_Allowed and Master_SSL_Verify_Server_Cert in their metrics
// (the tests of the instance program check that PostgreSQL's replicas
// verify the primary's certificate too).
func expectReplicationOverTLS(g Gomega, db *dbpilotv1alpha1.Database, pods int) {
	ctx := context.Background()
	secret, err := clientset.CoreV1().Secrets(db.Namespace).Get(ctx, db.CredentialsSecretName(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	superuser := string(secret.Data[desired.SecretKeySuperuserPassword])
	if db.Spec.Engine == dbpilotv1alpha1.EnginePostgres {
		svc, err := clientset.CoreV1().Services(db.Namespace).Get(ctx, db.ReadWriteServiceName(), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		rw := endpoint{svc.Spec.ClusterIP, int(svc.Spec.Ports[0].Port), db.ServiceHost(db.ReadWriteServiceName())}
		g.Eventually(func(g Gomega) {
			session, err := connectSuperuser(ctx, db, rw, superuser)
			g.Expect(err).NotTo(HaveOccurred())
			defer session.close()
			g.Expect(session.queryInt(ctx, "SELECT count(*)::int FROM pg_stat_replication JOIN pg_stat_ssl USING (pid) WHERE ssl")).
				To(Equal(pods-1), "WAL senders over TLS")
		}, time.Minute, time.Second).Should(Succeed())
		return
	}
	g.Eventually(func(g Gomega) {
		for _, instance := range db.Status.Instances {
			if instance.Role != dbpilotv1alpha1.RoleReplica {
				continue
			}
			families := podMetrics(g, db, instance.Name)
			for _, name := range []string{"mysql_slave_status_master_ssl_allowed", "mysql_slave_status_master_ssl_verify_server_cert"} {
				g.Expect(value(families, name, nil)).To(Equal(1.0), "%s of %s", name, instance.Name)
			}
		}
	}, time.Minute, time.Second).Should(Succeed())
}

// connectSuperuser opens a PostgreSQL session as the superuser to the
// postgres database.
func connectSuperuser(ctx context.Context, db *dbpilotv1alpha1.Database, at endpoint, password string) (sqlSession, error) {
	config, err := serverTLS(ctx, db, at.serverName)
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig("sslmode=verify-full")
	if err != nil {
		return nil, err
	}
	cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = at.address, uint16(at.port), "postgres", password, "postgres"
	cfg.TLSConfig, cfg.Fallbacks, cfg.ConnectTimeout = config, nil, 5*time.Second
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, textOnly(err)
	}
	return pgSession{conn}, nil
}

// podMetrics scrapes one pod's engine metrics as a Prometheus would, with
// the namespace's metrics token.
func podMetrics(g Gomega, db *dbpilotv1alpha1.Database, name string) map[string]*dto.MetricFamily {
	ctx := context.Background()
	pod, err := clientset.CoreV1().Pods(db.Namespace).Get(ctx, name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	secret, err := clientset.CoreV1().Secrets(db.Namespace).Get(ctx, dbpilotv1alpha1.MetricsSecretName, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(layout.MetricsPort))+layout.MetricsPath, nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+string(secret.Data[layout.KeyMetricsToken]))
	// The metrics endpoint's certificate is its own, made at start.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return families
}

// expectPasswordAloneRefused: the application user's session over TLS
// with its password but without its client certificate is refused.
func expectPasswordAloneRefused(g Gomega, db *dbpilotv1alpha1.Database) {
	ctx := context.Background()
	svc, err := clientset.CoreV1().Services(db.Namespace).Get(ctx, db.ReadWriteServiceName(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	secret, err := clientset.CoreV1().Secrets(db.Namespace).Get(ctx, db.CredentialsSecretName(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	session, err := connectWith(ctx, db, endpoint{svc.Spec.ClusterIP, int(svc.Spec.Ports[0].Port), db.ServiceHost(db.ReadWriteServiceName())},
		string(secret.Data[desired.SecretKeyUsername]), string(secret.Data[desired.SecretKeyPassword]))
	if err == nil {
		session.close()
	}
	// PostgreSQL names the certificate; MariaDB refuses it as it refuses
	// a wrong password.
	g.Expect(err).To(Or(MatchError(ContainSubstring("valid client certificate")), MatchError(ContainSubstring("Error 1045"))), "a session without the client certificate")
}

// expectSessionWithoutTLSRefused expects the application user's session
// without TLS through -rw to be refused for it (spec.tls.required).
func expectSessionWithoutTLSRefused(g Gomega, db *dbpilotv1alpha1.Database) {
	ctx := context.Background()
	svc, err := clientset.CoreV1().Services(db.Namespace).Get(ctx, db.ReadWriteServiceName(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	secret, err := clientset.CoreV1().Secrets(db.Namespace).Get(ctx, db.CredentialsSecretName(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	user, password := string(secret.Data[desired.SecretKeyUsername]), string(secret.Data[desired.SecretKeyPassword])
	if db.Spec.Engine == dbpilotv1alpha1.EnginePostgres {
		cfg, err := pgx.ParseConfig("sslmode=disable")
		g.Expect(err).NotTo(HaveOccurred())
		cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = svc.Spec.ClusterIP, uint16(svc.Spec.Ports[0].Port), user, password, user
		cfg.ConnectTimeout = 5 * time.Second
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			conn.Close(ctx)
			err = errors.New("the session opened")
		}
		g.Expect(textOnly(err)).To(MatchError(ContainSubstring("no encryption")), "a session without TLS")
		return
	}
	cfg := mysqldriver.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName = "tcp", net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port))), user, password, user
	cfg.Timeout = 5 * time.Second
	connector, err := mysqldriver.NewConnector(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	plain := sql.OpenDB(connector)
	defer plain.Close()
	// MariaDB refuses an insecure session as it refuses a wrong password
	// (MySQL names the transport).
	g.Expect(plain.PingContext(ctx)).To(Or(MatchError(ContainSubstring("insecure transport")), MatchError(ContainSubstring("Error 1045"))), "a session without TLS")
}

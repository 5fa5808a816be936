package realnode_test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// restrictedNamespace creates a namespace enforcing PodSecurity restricted;
// one that exists already (a test that prepares it) is kept. When the test
// ends, after its own cleanups, the namespace's pods must leave the node
// (the next tests' pods need its CPU).
func restrictedNamespace(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() { expectPodsLeave(NewWithT(t), name, nil) })
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	if _, err := clientset.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	NewWithT(t).Eventually(func() error {
		_, err := clientset.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

// sqlSession is what the test does through a Service: run statements and
// read one integer back.
type sqlSession interface {
	exec(ctx context.Context, statement string) error
	queryInt(ctx context.Context, query string) (int, error)
	close()
}

type pgSession struct{ conn *pgx.Conn }

func (s pgSession) exec(ctx context.Context, stmt string) error {
	_, err := s.conn.Exec(ctx, stmt)
	return err
}

func (s pgSession) queryInt(ctx context.Context, q string) (n int, err error) {
	err = s.conn.QueryRow(ctx, q).Scan(&n)
	return n, err
}

func (s pgSession) close() { s.conn.Close(context.Background()) }

type mysqlSession struct{ db *sql.DB }

func (s mysqlSession) exec(ctx context.Context, stmt string) error {
	_, err := s.db.ExecContext(ctx, stmt)
	return err
}

func (s mysqlSession) queryInt(ctx context.Context, q string) (n int, err error) {
	err = s.db.QueryRowContext(ctx, q).Scan(&n)
	return n, err
}

func (s mysqlSession) close() { s.db.Close() }

// connectApp opens a session as the application user through the
// Database's read-write Service, with the credentials from its Secret.
func connectApp(ctx context.Context, db *dbpilotv1alpha1.Database) (sqlSession, error) {
	return connectAppThrough(ctx, db, db.ReadWriteServiceName())
}

// connectAppThrough opens a session as the application user through one
// of the Database's Services.
func connectAppThrough(ctx context.Context, db *dbpilotv1alpha1.Database, service string) (sqlSession, error) {
	svc, err := clientset.CoreV1().Services(db.Namespace).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return connectAppAt(ctx, db, endpoint{svc.Spec.ClusterIP, int(svc.Spec.Ports[0].Port), db.ServiceHost(service)})
}

// connectAppToPod opens a session as the application user straight to one
// pod, at its address on the bridge.
func connectAppToPod(ctx context.Context, db *dbpilotv1alpha1.Database, name string) (sqlSession, error) {
	at, err := podEndpoint(ctx, db, name)
	if err != nil {
		return nil, err
	}
	return connectAppAt(ctx, db, at)
}

// podEndpoint is the pod's engine at its address on the bridge, its
// certificate verified for its name under the headless Service.
func podEndpoint(ctx context.Context, db *dbpilotv1alpha1.Database, name string) (endpoint, error) {
	pod, err := clientset.CoreV1().Pods(db.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return endpoint{}, err
	}
	profile, _ := db.Spec.Engine.Profile()
	return endpoint{pod.Status.PodIP, int(profile.Port), name + "." + db.ServiceHost(db.HeadlessServiceName())}, nil
}

// endpoint is where a session connects (the host has no cluster DNS: an
// address) and the name the server's certificate is verified for.
type endpoint struct {
	address    string
	port       int
	serverName string
}

// connectAppAt opens a session as the application user to the endpoint,
// with the credentials from the Database's Secret, presenting its client
// certificate from <name>-app-tls, as a client that took it before it is
// required does (whether it is or not).
func connectAppAt(ctx context.Context, db *dbpilotv1alpha1.Database, at endpoint) (sqlSession, error) {
	secret, err := clientset.CoreV1().Secrets(db.Namespace).Get(ctx, db.CredentialsSecretName(), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	issued, err := clientset.CoreV1().Secrets(db.Namespace).Get(ctx, db.ApplicationCertificateSecretName(), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(issued.Data[layout.KeyTLSCert], issued.Data[layout.KeyTLSKey])
	if err != nil {
		return nil, fmt.Errorf("Secret %s: %w", issued.Name, err)
	}
	certificate := &pair
	return connectPresenting(ctx, db, at, string(secret.Data[desired.SecretKeyUsername]), string(secret.Data[desired.SecretKeyPassword]), certificate)
}

// encryptedQuery reads 1 when the session runs over TLS.
func encryptedQuery(engine dbpilotv1alpha1.Engine) string {
	if engine == dbpilotv1alpha1.EnginePostgres {
		return "SELECT ssl::int FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
	}
	return "SELECT COUNT(*) FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'SSL_CIPHER' AND VARIABLE_VALUE <> ''"
}

// serverTLS verifies the Database's server certificate for serverName
// against the authority clients are given: ca.crt of dbpilot's authority's
// Secret, or of the user's certificate Secret when the spec names one.
func serverTLS(ctx context.Context, db *dbpilotv1alpha1.Database, serverName string) (*tls.Config, error) {
	trusted := db.CertificateAuthoritySecretName()
	if provided := db.ProvidedServerCertificateSecretName(); provided != "" {
		trusted = provided
	}
	secret, err := clientset.CoreV1().Secrets(db.Namespace).Get(ctx, trusted, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data[layout.KeyCACert]) {
		return nil, fmt.Errorf("Secret %s holds no certificate authority", secret.Name)
	}
	return &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}, nil
}

// connectWith opens a session to the endpoint as user with password, over
// TLS that verifies the server's certificate (sslmode=verify-full; no
// fallback to a session without TLS).
func connectWith(ctx context.Context, db *dbpilotv1alpha1.Database, at endpoint, user, password string) (sqlSession, error) {
	return connectPresenting(ctx, db, at, user, password, nil)
}

// connectPresenting is connectWith presenting a client certificate, when
// one is given.
func connectPresenting(ctx context.Context, db *dbpilotv1alpha1.Database, at endpoint, user, password string, certificate *tls.Certificate) (sqlSession, error) {
	config, err := serverTLS(ctx, db, at.serverName)
	if err != nil {
		return nil, err
	}
	if certificate != nil {
		config.Certificates = []tls.Certificate{*certificate}
	}
	return connectOver(ctx, db, at, user, password, config)
}

// connectOver opens a session to the endpoint as user with password over
// TLS as config has it (no fallback to a session without TLS), to the
// database of the user's name.
func connectOver(ctx context.Context, db *dbpilotv1alpha1.Database, at endpoint, user, password string, config *tls.Config) (sqlSession, error) {
	return connectOverTo(ctx, db, at, user, password, user, config)
}

// connectOverTo is connectOver to database.
func connectOverTo(ctx context.Context, db *dbpilotv1alpha1.Database, at endpoint, user, password, database string, config *tls.Config) (sqlSession, error) {
	if db.Spec.Engine == dbpilotv1alpha1.EnginePostgres {
		cfg, err := pgx.ParseConfig("sslmode=verify-full")
		if err != nil {
			return nil, err
		}
		cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = at.address, uint16(at.port), user, password, database
		cfg.TLSConfig, cfg.Fallbacks = config, nil
		cfg.ConnectTimeout = 5 * time.Second
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return nil, textOnly(err)
		}
		return pgSession{conn}, nil
	}
	cfg := mysqldriver.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName = "tcp", net.JoinHostPort(at.address, strconv.Itoa(at.port)), user, password, database
	cfg.Timeout, cfg.TLS = 5*time.Second, config
	connector, err := mysqldriver.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	sqlDB := sql.OpenDB(connector)
	if err := sqlDB.PingContext(ctx); err != nil {
		sqlDB.Close()
		return nil, textOnly(err)
	}
	return mysqlSession{sqlDB}, nil
}

// textOnly is err as its message alone: a driver's connection error
// carries its configuration, password and client key included, which a
// failing assertion would print in full.
func textOnly(err error) error {
	return errors.New(err.Error())
}

// newDatabase is a Database of one engine version with 1Gi volumes.
func newDatabase(namespace, name string, engine dbpilotv1alpha1.Engine, version string, replicas int32) *dbpilotv1alpha1.Database {
	return &dbpilotv1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: dbpilotv1alpha1.DatabaseSpec{
			Engine:   engine,
			Version:  version,
			Replicas: ptr.To(replicas),
			Storage:  &dbpilotv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
		},
	}
}

// deleteAndWait deletes the Database and waits until the operator has
// finalized it.
func deleteAndWait(g Gomega, db *dbpilotv1alpha1.Database) {
	g.Expect(client.IgnoreNotFound(k8sClient.Delete(context.Background(), db))).To(Succeed())
	g.Eventually(func() error {
		return k8sClient.Get(context.Background(), client.ObjectKeyFromObject(db), db)
	}, 2*time.Minute, 500*time.Millisecond).Should(MatchError(ContainSubstring("not found")))
}

// changeDatabase applies change to the latest version of the Database and
// writes it, again on a conflict: the operator writes its status all the
// time, and each status write is a new resourceVersion.
func changeDatabase(g Gomega, db *dbpilotv1alpha1.Database, change func(db *dbpilotv1alpha1.Database)) {
	g.Eventually(func() error {
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(db), db); err != nil {
			return err
		}
		change(db)
		return k8sClient.Update(context.Background(), db)
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed(), "changing Database %s", db.Name)
}

func available(db *dbpilotv1alpha1.Database) bool {
	return db.Status.ObservedGeneration == db.Generation &&
		meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionAvailable)
}

// waitAvailable waits until the Database is Available and returns how long
// it took.
func waitAvailable(g Gomega, db *dbpilotv1alpha1.Database, timeout time.Duration) time.Duration {
	start := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(available(db)).To(BeTrue(), "Available: %+v", db.Status.Conditions)
	}, timeout, 200*time.Millisecond).Should(Succeed())
	return time.Since(start)
}

// nodeEngines are the engine versions the node has images for.
var nodeEngines = []struct {
	engine  dbpilotv1alpha1.Engine
	version string
}{
	{dbpilotv1alpha1.EnginePostgres, "15"},
	{dbpilotv1alpha1.EngineMariaDB, "10.11"},
}

// TestDatabaseServesAndKeepsData creates a one-pod Database of each engine
// the machine has images for, checks it turns Available only once the
// engine really takes the application user's sessions through the -rw
// Service, writes rows, deletes the pod and reads the rows back from the
// new pod on the same volume.
func TestDatabaseServesAndKeepsData(t *testing.T) {
	besideOtherTests(t, 500) // one small pod at a time
	for _, tc := range nodeEngines {
		t.Run(string(tc.engine), func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := "real-" + string(tc.engine)
			restrictedNamespace(t, ns)
			db := newDatabase(ns, "orders", tc.engine, tc.version, 1)
			g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
			// Even when the test fails: the next tests' pods need the CPU.
			t.Cleanup(func() { deleteAndWait(NewWithT(t), db) })
			took := waitAvailable(g, db, 3*time.Minute)
			t.Logf("%s: create -> Available in %.1fs", tc.engine, took.Seconds())

			// Available means the engine takes the application user's
			// sessions now; kube-proxy programs a Service about a second
			// after its endpoint turns ready (the delay is printed; once,
			// on a loaded CI machine, a MariaDB session hung for 10 s, so
			// the slack is 30 s).
			var session sqlSession
			connectStart := time.Now()
			g.Eventually(func() (err error) {
				session, err = connectApp(ctx, db)
				return err
			}, 30*time.Second, 100*time.Millisecond).Should(Succeed(), "the application user connects through the -rw Service once the Database is Available")
			t.Logf("%s: first session through the -rw Service %.2fs after Available", tc.engine, time.Since(connectStart).Seconds())
			// The session verified the server's certificate; the server
			// says it is encrypted.
			g.Expect(session.queryInt(ctx, encryptedQuery(tc.engine))).To(Equal(1), "the session is over TLS")
			g.Expect(session.exec(ctx, "CREATE TABLE orders (id INT PRIMARY KEY, note VARCHAR(40))")).To(Succeed())
			for i := 1; i <= 100; i++ {
				g.Expect(session.exec(ctx, fmt.Sprintf("INSERT INTO orders VALUES (%d, 'order %d')", i, i))).To(Succeed())
			}
			sum, err := session.queryInt(ctx, "SELECT SUM(id) FROM orders")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sum).To(Equal(5050))
			session.close()

			pods, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: db.Selector()})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods.Items).To(HaveLen(1))
			old := pods.Items[0]
			g.Expect(old.Spec.NodeName).To(Equal("dbpilot-node"))
			g.Expect(clientset.CoreV1().Pods(ns).Delete(ctx, old.Name, metav1.DeleteOptions{})).To(Succeed())
			g.Eventually(func(g Gomega) {
				pod, err := clientset.CoreV1().Pods(ns).Get(ctx, old.Name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(pod.UID).NotTo(Equal(old.UID), "the pod is recreated")
			}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
			took = waitAvailable(g, db, 3*time.Minute)
			t.Logf("%s: pod deleted -> Available again in %.1fs", tc.engine, took.Seconds())

			g.Eventually(func() (int, error) {
				session, err := connectApp(ctx, db)
				if err != nil {
					return 0, err
				}
				defer session.close()
				return session.queryInt(ctx, "SELECT SUM(id) FROM orders")
			}, 30*time.Second, 500*time.Millisecond).Should(Equal(5050), "the rows survive the pod")

			// The application password rotated by changing the Secret:
			// the new one works, the old one no longer does, and neither
			// appears anywhere a user or the operator writes.
			if tc.engine == dbpilotv1alpha1.EnginePostgres {
				former := rotateApplicationPassword(t, g, db)
				expectNoInternalPasswords(g, db, former)
			}
		})
	}
}

// rotateApplicationPassword changes the application password in the
// credentials Secret, waits until the running engine takes the new one
// through the -rw Service and refuses the old one, and returns the old one.
func rotateApplicationPassword(t *testing.T, g Gomega, db *dbpilotv1alpha1.Database) string {
	ctx := context.Background()
	secret, err := clientset.CoreV1().Secrets(db.Namespace).Get(ctx, db.CredentialsSecretName(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	user, former := string(secret.Data[desired.SecretKeyUsername]), string(secret.Data[desired.SecretKeyPassword])
	secret.Data[desired.SecretKeyPassword] = []byte(rand.Text())
	_, err = clientset.CoreV1().Secrets(db.Namespace).Update(ctx, secret, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	rotated := time.Now()
	svc, err := clientset.CoreV1().Services(db.Namespace).Get(ctx, db.ReadWriteServiceName(), metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	rw := endpoint{svc.Spec.ClusterIP, int(svc.Spec.Ports[0].Port), db.ServiceHost(db.ReadWriteServiceName())}
	g.Eventually(func() error {
		session, err := connectApp(ctx, db)
		if err == nil {
			session.close()
		}
		return err
	}, 3*time.Minute, time.Second).Should(Succeed(), "the new password works once the kubelet has updated the mounted Secret")
	t.Logf("%s: password rotated: the new one works %.1fs after the Secret changed", db.Spec.Engine, time.Since(rotated).Seconds())
	session, err := connectWith(ctx, db, rw, user, former)
	if err == nil {
		session.close()
	}
	g.Expect(err).To(HaveOccurred(), "the old password is refused")
	return former
}

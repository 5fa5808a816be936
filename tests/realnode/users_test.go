package realnode_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
)

// reportUser is the ReadOnly user of spec.users the replication test adds.
const reportUser = "report"

// expectManagedUserReads adds a ReadOnly user limited to one session to
// the running Database: once the kubelet has brought the replication
// Secret's new key to the pods, with no pod restarted, it logs in through
// the -ro Service with the password of its own Secret (over TLS, with no
// client certificate: only the application user needs one), reads what
// the application wrote, writes nothing through the -rw Service and,
// holding a session there, is refused a second one; status.users tells
// it Ready (the primary's report, keyed with the replication password,
// names the entry the operator wrote). Given a validUntil, its open
// session on a replica ends from that instant (not before), it logs in
// nowhere and status.users tells it Expired (with the UserExpired
// Event); the validUntil taken off, it
// reads again. Removed, its open session on a replica ends, it logs in
// nowhere and status.users tells it Locked.
// It returns the user's password, for the search of secrets in logs.
func expectManagedUserReads(t *testing.T, g Gomega, db *dbpilotv1alpha1.Database, tc replicationSQL, sum int) string {
	t.Helper()
	ctx := context.Background()
	before := podUIDsOf(g, db)
	setUsers := func(users ...dbpilotv1alpha1.DatabaseUser) {
		g.Eventually(func() error {
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db); err != nil {
				return err
			}
			db.Spec.Users = users
			return k8sClient.Update(ctx, db)
		}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
	}
	setUsers(dbpilotv1alpha1.DatabaseUser{Name: reportUser, ConnectionLimit: ptr.To[int32](1)})
	start := time.Now()
	var password string
	g.Eventually(func(g Gomega) {
		secret, err := clientset.CoreV1().Secrets(db.Namespace).Get(ctx, db.UserSecretName(reportUser), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		password = string(secret.Data[desired.SecretKeyPassword])
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	connect := func(service string) (sqlSession, error) {
		svc, err := clientset.CoreV1().Services(db.Namespace).Get(ctx, service, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		at := endpoint{svc.Spec.ClusterIP, int(svc.Spec.Ports[0].Port), db.ServiceHost(service)}
		config, err := serverTLS(ctx, db, at.serverName)
		if err != nil {
			return nil, err
		}
		return connectOverTo(ctx, db, at, reportUser, password, desired.AppUsername, config)
	}
	// readsOnAReplica is the sum of the rows the user reads through the
	// -ro Service, on a replica.
	readsOnAReplica := func(g Gomega) int {
		reader, err := connect(db.ReadOnlyServiceName())
		g.Expect(err).NotTo(HaveOccurred())
		defer reader.close()
		replica, err := reader.queryInt(ctx, tc.isReplica)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(replica).To(Equal(1), "read through the -ro Service, on a replica")
		n, err := reader.queryInt(ctx, tc.sum)
		g.Expect(err).NotTo(HaveOccurred())
		return n
	}
	// The kubelet refreshes a mounted Secret on its own period.
	g.Eventually(readsOnAReplica, 3*time.Minute, time.Second).Should(Equal(sum))
	t.Logf("%s: the user added to spec.users read the application's rows through the -ro Service %.1fs after", tc.engine, time.Since(start).Seconds())
	expectUserState(g, db, dbpilotv1alpha1.UserReady)
	t.Logf("%s: status.users told the user Ready %.1fs after", tc.engine, time.Since(start).Seconds())
	writer, err := connect(db.ReadWriteServiceName())
	g.Expect(err).NotTo(HaveOccurred())
	defer writer.close()
	g.Expect(writer.exec(ctx, tc.more3)).NotTo(Succeed(), "the ReadOnly user wrote rows through the -rw Service")
	// Limited to one session, which writer holds on the primary.
	if second, err := connect(db.ReadWriteServiceName()); err == nil {
		second.close()
		t.Errorf("%s: the user limited to one session opened a second on the primary", tc.engine)
	} else {
		g.Expect(err.Error()).To(Or(ContainSubstring("too many connections for role"), ContainSubstring("max_user_connections")), "the second session is refused by the limit")
	}

	// Given a validUntil 20 s ahead while a session on a replica is
	// open: that session ends from then on, not before, the user is
	// Expired and logs in through neither Service; the validUntil taken
	// off, it reads again.
	// A session the reads above closed may still count on the replica
	// a moment.
	sessionOnAReplica := func() sqlSession {
		var session sqlSession
		g.Eventually(func() (err error) {
			session, err = connect(db.ReadOnlyServiceName())
			return err
		}, 30*time.Second, time.Second).Should(Succeed())
		return session
	}
	held := sessionOnAReplica()
	defer held.close()
	until := time.Now().Add(20 * time.Second).Truncate(time.Second)
	setUsers(dbpilotv1alpha1.DatabaseUser{Name: reportUser, ConnectionLimit: ptr.To[int32](1), ValidUntil: &metav1.Time{Time: until}})
	g.Eventually(func() error {
		_, err := held.queryInt(ctx, tc.sum)
		return err
	}, 2*time.Minute, 500*time.Millisecond).ShouldNot(Succeed(), "the session open at validUntil ends")
	g.Expect(time.Now()).To(BeTemporally(">=", until), "the session ended before the user's validUntil")
	t.Logf("%s: the session of the user on a replica ended %.1fs after its validUntil", tc.engine, time.Since(until).Seconds())
	expectUserState(g, db, dbpilotv1alpha1.UserExpired)
	t.Logf("%s: status.users told the user Expired %.1fs after its validUntil", tc.engine, time.Since(until).Seconds())
	g.Eventually(func(g Gomega) string { return eventNote(g, db.Namespace, dbpilotv1alpha1.EventReasonUserExpired) }, 30*time.Second, time.Second).
		Should(ContainSubstring("User "+reportUser+": its validUntil, "+until.UTC().Format(time.RFC3339)+", has come"), "the UserExpired Event")
	for _, service := range []string{db.ReadOnlyServiceName(), db.ReadWriteServiceName()} {
		if session, err := connect(service); err == nil {
			session.close()
			t.Errorf("%s: the user logs in through %s after its validUntil", tc.engine, service)
		}
	}
	setUsers(dbpilotv1alpha1.DatabaseUser{Name: reportUser, ConnectionLimit: ptr.To[int32](1)})
	start = time.Now()
	g.Eventually(readsOnAReplica, 3*time.Minute, time.Second).Should(Equal(sum), "the validUntil taken off, the user reads again")
	t.Logf("%s: the user read again %.1fs after its validUntil was taken off", tc.engine, time.Since(start).Seconds())
	expectUserState(g, db, dbpilotv1alpha1.UserReady)

	// Removed while a session on a replica is open: the replica ends it
	// (the primary's lock reaches it by replication, its sessions do not).
	reader := sessionOnAReplica()
	defer reader.close()
	setUsers()
	start = time.Now()
	g.Eventually(func() error {
		_, err := reader.queryInt(ctx, tc.sum)
		return err
	}, 3*time.Minute, time.Second).ShouldNot(Succeed(), "the removed user's session on a replica ends")
	t.Logf("%s: the removed user's session on a replica ended %.1fs after", tc.engine, time.Since(start).Seconds())
	expectUserState(g, db, dbpilotv1alpha1.UserLocked)
	t.Logf("%s: status.users told the removed user Locked %.1fs after", tc.engine, time.Since(start).Seconds())
	for _, service := range []string{db.ReadOnlyServiceName(), db.ReadWriteServiceName()} {
		g.Eventually(func() error {
			session, err := connect(service)
			if err == nil {
				session.close()
			}
			return err
		}, time.Minute, time.Second).ShouldNot(Succeed(), "the removed user logs in through %s", service)
	}
	g.Expect(podUIDsOf(g, db)).To(Equal(before), "adding and removing a user restarted no pod")
	return password
}

// podUIDsOf maps the Database's pods to their UIDs.
func podUIDsOf(g Gomega, db *dbpilotv1alpha1.Database) map[string]string {
	pods, err := clientset.CoreV1().Pods(db.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: labels.FormatLabels(db.SelectorLabels())})
	g.Expect(err).NotTo(HaveOccurred())
	uids := map[string]string{}
	for _, pod := range pods.Items {
		uids[pod.Name] = string(pod.UID)
	}
	return uids
}

// expectUserState waits for status.users to list reportUser alone, in
// state.
func expectUserState(g Gomega, db *dbpilotv1alpha1.Database, state dbpilotv1alpha1.UserState) {
	g.Eventually(func(g Gomega) []dbpilotv1alpha1.UserStatus {
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(db), db)).To(Succeed())
		return db.Status.Users
	}, 2*time.Minute, time.Second).Should(ConsistOf(And(HaveField("Name", reportUser), HaveField("State", state))), "status.users tells %s %s", reportUser, state)
}

package e2e_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// TestUsersReachThePodsWithoutARestart adds users to a running two-pod
// Database: each gets a Secret of its own with a generated password, and
// the replication Secret, which the pods mount whole, lists them with
// their access, while no pod restarts. A password edited in a user's
// Secret follows there; a user removed is listed locked (with the
// UserRemoved Event) and keeps its Secret; a user named as the
// application user is refused in Degraded, naming the field, and left
// out, and so is one whose Secret is not dbpilot's for it (never written);
// status.users lists it Failed and the others Pending, since no instance
// program runs on kwok to report them kept.
// A Database without users gets no users key. Deleted with Retain, every
// user's Secret is kept.
func TestUsersReachThePodsWithoutARestart(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "users")
	startOperator(t, ns)

	db := newDatabase(ns, "ledger", dbpilotv1alpha1.EngineMariaDB)
	db.Spec.Replicas = ptr.To[int32](2)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	waitConverged(g, db)
	replication := &corev1.Secret{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.ReplicationSecretName()}, replication)).To(Succeed())
	g.Expect(replication.Data).NotTo(HaveKey(layout.KeyUsers), "a Database without users")
	before := podUIDs(g, db)
	hash := statefulSetOf(g, db).Annotations[desired.AnnotationTemplateHash]
	series := map[string]string{"namespace": ns, "database": db.Name}
	g.Expect(gatheredSeries(g, "dbpilot_database_users", series)).To(BeEmpty(), "a Database without users has no user series")

	update(g, db, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Users = []dbpilotv1alpha1.DatabaseUser{{Name: "report"}, {Name: "etl_loader", Access: dbpilotv1alpha1.UserAccessReadWrite,
			ValidUntil: &metav1.Time{Time: time.Date(2099, 1, 31, 19, 0, 0, 0, time.FixedZone("CET", 3600))}}}
	})
	userSecret := func(g Gomega, user string) *corev1.Secret {
		secret := &corev1.Secret{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.UserSecretName(user)}, secret)).To(Succeed())
		return secret
	}
	managed := func(g Gomega) map[string]layout.ManagedUser { return managedUsersOf(g, db) }
	g.Eventually(func(g Gomega) {
		users := managed(g)
		g.Expect(users).To(HaveLen(2))
		for name, access := range map[string]string{"report": layout.AccessReadOnly, "etl_loader": layout.AccessReadWrite} {
			secret := userSecret(g, name)
			g.Expect(secret.Name).To(Equal("ledger.user." + map[string]string{"report": "report", "etl_loader": "etl-loader"}[name]))
			g.Expect(string(secret.Data[desired.SecretKeyUsername])).To(Equal(name))
			g.Expect(secret.Data[desired.SecretKeyPassword]).To(HaveLen(32), "a generated password")
			g.Expect(secret.Labels).To(HaveKeyWithValue(dbpilotv1alpha1.LabelUser, name))
			validUntil := map[string]string{"etl_loader": "2099-01-31T18:00:00Z"}[name]
			g.Expect(users[name]).To(Equal(layout.ManagedUser{Name: name, Access: access, Password: string(secret.Data[desired.SecretKeyPassword]), ValidUntil: validUntil}))
		}
	}, convergeTimeout, pollInterval).Should(Succeed())
	waitConverged(g, db)
	g.Expect(podUIDs(g, db)).To(Equal(before), "adding users restarts no pod")
	g.Expect(statefulSetOf(g, db).Annotations[desired.AnnotationTemplateHash]).To(Equal(hash), "adding users changes no pod template")

	// The owner rotates a password by editing the user's Secret.
	etl := userSecret(g, "etl_loader")
	etl.Data[desired.SecretKeyPassword] = []byte("rotated-by-the-owner")
	g.Expect(k8sClient.Update(ctx, etl)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(managed(g)["etl_loader"].Password).To(Equal("rotated-by-the-owner"))
	}, convergeTimeout, pollInterval).Should(Succeed())

	// Removed: locked, its Secret kept. Named as the application user
	// (generated credentials name it app): refused, left out.
	update(g, db, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Users = []dbpilotv1alpha1.DatabaseUser{{Name: "report"}, {Name: desired.AppUsername}}
	})
	g.Eventually(func(g Gomega) {
		users := managed(g)
		g.Expect(users).To(HaveLen(2))
		g.Expect(users["etl_loader"]).To(Equal(layout.ManagedUser{Name: "etl_loader", Locked: true}))
		g.Expect(users["report"].Password).NotTo(BeEmpty())
		fetch(g, db)
		degraded := findCondition(db, dbpilotv1alpha1.ConditionDegraded)
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Reason).To(Equal(dbpilotv1alpha1.ReasonUsersInvalid))
		g.Expect(degraded.Message).To(ContainSubstring(`spec.users[1].name: "app" is the application user`))
		g.Expect(eventReasons(g, db)).To(ContainElement(dbpilotv1alpha1.EventReasonUserRemoved))
		// kwok runs no instance program: no primary reports keeping a
		// user, so none is Ready or Locked.
		g.Expect(db.Status.Users).To(ConsistOf(
			HaveField("Name", "app"), HaveField("Name", "etl_loader"), HaveField("Name", "report")))
		for _, u := range db.Status.Users {
			switch u.Name {
			case desired.AppUsername:
				g.Expect(u.State).To(Equal(dbpilotv1alpha1.UserFailed))
				g.Expect(u.Message).To(ContainSubstring(`spec.users[1].name: "app" is the application user`))
			default:
				g.Expect(u.State).To(Equal(dbpilotv1alpha1.UserPending), u.Name)
			}
		}
		// The series the DatabaseDegraded and DatabaseUsersPending alerts read.
		g.Expect(gathered(g, "dbpilot_database_degraded", withLabels(series, "reason", dbpilotv1alpha1.ReasonUsersInvalid))).To(Equal(1.0))
		for state, count := range map[dbpilotv1alpha1.UserState]float64{dbpilotv1alpha1.UserFailed: 1, dbpilotv1alpha1.UserPending: 2, dbpilotv1alpha1.UserReady: 0, dbpilotv1alpha1.UserLocked: 0, dbpilotv1alpha1.UserExpired: 0} {
			g.Expect(gatheredSeries(g, "dbpilot_database_users", withLabels(series, "state", string(state)))).To(HaveLen(1), "state %s", state)
			g.Expect(gathered(g, "dbpilot_database_users", withLabels(series, "state", string(state)))).To(Equal(count), "state %s", state)
		}
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Expect(userSecret(g, "etl_loader").Data[desired.SecretKeyPassword]).To(Equal([]byte("rotated-by-the-owner")), "the removed user's Secret is kept")
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.UserSecretName(desired.AppUsername)}, &corev1.Secret{})).
		To(WithTransform(isNotFound, BeTrue()), "no Secret for a user refused")

	// A Secret of the user's name that is not dbpilot's for that user:
	// never used nor written, the user refused by name.
	intruder := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: db.UserSecretName("intruder")},
		Data: map[string][]byte{desired.SecretKeyPassword: []byte("chosen-by-someone-else")}}
	g.Expect(k8sClient.Create(ctx, intruder)).To(Succeed())
	update(g, db, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Users = []dbpilotv1alpha1.DatabaseUser{{Name: "report"}, {Name: "intruder"}}
	})
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		degraded := findCondition(db, dbpilotv1alpha1.ConditionDegraded)
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Reason).To(Equal(dbpilotv1alpha1.ReasonUsersInvalid))
		g.Expect(degraded.Message).To(ContainSubstring("spec.users[1]: Secret ledger.user.intruder is not dbpilot's for this user"))
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Expect(managed(g)).NotTo(HaveKey("intruder"))
	fetch(g, intruder)
	g.Expect(intruder.Data).To(Equal(map[string][]byte{desired.SecretKeyPassword: []byte("chosen-by-someone-else")}), "a Secret not dbpilot's is never written")

	// Taken out again: Degraded clears, the locked user stays locked.
	update(g, db, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Users = db.Spec.Users[:1]
	})
	g.Eventually(func(g Gomega) {
		fetch(g, db)
		degraded := findCondition(db, dbpilotv1alpha1.ConditionDegraded)
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Status).To(BeEquivalentTo("False"))
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Expect(gatheredSeries(g, "dbpilot_database_degraded", series)).To(BeEmpty(), "no Degraded series once it clears")
	g.Expect(managed(g)["etl_loader"].Locked).To(BeTrue())
	g.Expect(podUIDs(g, db)).To(Equal(before), "no pod restarted")

	// Deleted (deletionPolicy Retain): every user's Secret is kept, the
	// removed user's too, released from the Database.
	g.Expect(k8sClient.Delete(ctx, db)).To(Succeed())
	g.Eventually(func() bool {
		return isNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), &dbpilotv1alpha1.Database{}))
	}, convergeTimeout, pollInterval).Should(BeTrue(), "the Database is gone")
	g.Eventually(func(g Gomega) {
		g.Expect(gatheredSeries(g, "dbpilot_database_users", series)).To(BeEmpty(), "a deleted Database's user series")
	}, convergeTimeout, pollInterval).Should(Succeed())
	for _, user := range []string{"report", "etl_loader"} {
		secret := userSecret(g, user)
		g.Expect(secret.Labels).To(HaveKeyWithValue(dbpilotv1alpha1.LabelRetainedFrom, db.Name), "Secret %s", secret.Name)
		g.Expect(secret.OwnerReferences).To(BeEmpty(), "Secret %s", secret.Name)
	}
}

// TestUsersWithTheOwnersPasswordSecret: a user whose passwordSecret names
// a Secret of the owner's takes its password from there. While the
// Secret does not exist the user is Failed and Degraded (UsersInvalid)
// names the field; once created, the replication Secret lists the user
// with that password, and an edit follows there (kwok's pods never
// answer, so the operator polls them every 5 s whatever it watches: the
// Secret's watch is checked by TestUserSecretsOfNamesEverySecretOfTheOwners); a username key naming another
// user is refused, the former password kept. dbpilot generates no Secret
// for the user and never writes the owner's.
func TestUsersWithTheOwnersPasswordSecret(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := restrictedNamespace(t, "users-own")
	startOperator(t, ns)

	db := newDatabase(ns, "crm", dbpilotv1alpha1.EnginePostgres)
	db.Spec.Users = []dbpilotv1alpha1.DatabaseUser{{Name: "report"}, {Name: "etl", PasswordSecret: &dbpilotv1alpha1.UserPasswordSecret{Name: "etl-password"}}}
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	field := "spec.users[1].passwordSecret.name"
	managed := func(g Gomega) map[string]layout.ManagedUser { return managedUsersOf(g, db) }
	degradedBy := func(g Gomega, reason, text string) {
		fetch(g, db)
		degraded := findCondition(db, dbpilotv1alpha1.ConditionDegraded)
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Reason).To(Equal(reason))
		g.Expect(degraded.Message).To(ContainSubstring(text))
	}
	g.Eventually(func(g Gomega) {
		degradedBy(g, dbpilotv1alpha1.ReasonUsersInvalid, field+": Secret etl-password does not exist")
		g.Expect(db.Status.Users).To(ContainElement(And(HaveField("Name", "etl"), HaveField("State", dbpilotv1alpha1.UserFailed))))
		g.Expect(managed(g)).To(And(HaveKey("report"), Not(HaveKey("etl"))))
	}, convergeTimeout, pollInterval).Should(Succeed())

	own := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etl-password"},
		Data: map[string][]byte{desired.SecretKeyPassword: []byte("chosen-by-the-owner-1\n")}}
	g.Expect(k8sClient.Create(ctx, own)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(managed(g)["etl"]).To(Equal(layout.ManagedUser{Name: "etl", Access: layout.AccessReadOnly, Password: "chosen-by-the-owner-1"}))
		degradedBy(g, dbpilotv1alpha1.ReasonAsExpected, "")
	}, convergeTimeout, pollInterval).Should(Succeed())

	fetch(g, own)
	own.Data[desired.SecretKeyPassword] = []byte("chosen-by-the-owner-2")
	g.Expect(k8sClient.Update(ctx, own)).To(Succeed())
	g.Eventually(func(g Gomega) string {
		return managed(g)["etl"].Password
	}, convergeTimeout, pollInterval).Should(Equal("chosen-by-the-owner-2"))

	fetch(g, own)
	own.Data[desired.SecretKeyUsername] = []byte("someone_else")
	own.Data[desired.SecretKeyPassword] = []byte("chosen-by-the-owner-3")
	g.Expect(k8sClient.Update(ctx, own)).To(Succeed())
	g.Eventually(func(g Gomega) {
		degradedBy(g, dbpilotv1alpha1.ReasonUsersInvalid, field+": Secret etl-password key username names another user than etl")
	}, convergeTimeout, pollInterval).Should(Succeed())
	g.Expect(managed(g)["etl"].Password).To(Equal("chosen-by-the-owner-2"), "the former password kept")
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.UserSecretName("etl")}, &corev1.Secret{})).
		To(WithTransform(isNotFound, BeTrue()), "no Secret generated for a user with its owner's")
	fetch(g, own)
	g.Expect(own.OwnerReferences).To(BeEmpty(), "the owner's Secret is never written")
	g.Expect(own.Labels).To(BeEmpty(), "the owner's Secret is never written")
	for _, entry := range own.ManagedFields {
		g.Expect(entry.Manager).NotTo(ContainSubstring("dbpilot"), "the owner's Secret is never written")
	}
}

// managedUsersOf reads the users the replication Secret of db lists for
// the pods, by name.
func managedUsersOf(g Gomega, db *dbpilotv1alpha1.Database) map[string]layout.ManagedUser {
	replication := &corev1.Secret{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: db.Namespace, Name: db.ReplicationSecretName()}, replication)).To(Succeed())
	users, err := layout.ParseManagedUsers(replication.Data[layout.KeyUsers])
	g.Expect(err).NotTo(HaveOccurred())
	byName := map[string]layout.ManagedUser{}
	for _, u := range users {
		byName[u.Name] = u
	}
	return byName
}

// withLabels is a copy of labels with one more.
func withLabels(labels map[string]string, name, value string) map[string]string {
	with := map[string]string{name: value}
	for k, v := range labels {
		with[k] = v
	}
	return with
}

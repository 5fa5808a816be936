package realnode_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/localcluster"
	"github.com/dbpilot/dbpilot/internal/s3server"
)

// startS3 runs a real S3 server (versitygw) on the node's bridge, where pods
// reach it, with a bucket named backups, and a Secret of its credentials
// in the namespace.
func startS3(t *testing.T, g Gomega, namespace string) *s3server.Server {
	t.Helper()
	binDir, err := localcluster.DefaultBinDir()
	g.Expect(err).NotTo(HaveOccurred())
	server, err := s3server.Start(context.Background(), s3server.Config{Binary: filepath.Join(binDir, "versitygw"),
		Host: localcluster.BridgeIP, Dir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { server.Stop() })
	g.Expect(server.CreateBucket(context.Background(), "backups")).To(Succeed())
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "s3-credentials"},
		StringData: map[string]string{layout.KeyAccessKeyID: server.AccessKey, layout.KeySecretAccessKey: server.SecretKey}}
	g.Expect(k8sClient.Create(context.Background(), secret)).To(Succeed())
	return server
}

// restartS3 starts the server again on the same address and directory.
func restartS3(g Gomega, old *s3server.Server) *s3server.Server {
	binDir, err := localcluster.DefaultBinDir()
	g.Expect(err).NotTo(HaveOccurred())
	var port int
	_, err = fmt.Sscanf(old.Endpoint[strings.LastIndex(old.Endpoint, ":")+1:], "%d", &port)
	g.Expect(err).NotTo(HaveOccurred())
	server, err := s3server.Start(context.Background(), s3server.Config{Binary: filepath.Join(binDir, "versitygw"),
		Host: localcluster.BridgeIP, Port: port, Dir: old.Dir, AccessKey: old.AccessKey, SecretKey: old.SecretKey})
	g.Expect(err).NotTo(HaveOccurred())
	return server
}

// backupsOf lists the Database's DatabaseBackups by phase.
func backupsOf(g Gomega, db *dbpilotv1alpha1.Database) map[dbpilotv1alpha1.BackupPhase][]dbpilotv1alpha1.DatabaseBackup {
	list := &dbpilotv1alpha1.DatabaseBackupList{}
	g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(db.Namespace))).To(Succeed())
	byPhase := map[dbpilotv1alpha1.BackupPhase][]dbpilotv1alpha1.DatabaseBackup{}
	for _, b := range list.Items {
		if b.Spec.DatabaseName == db.Name && b.DeletionTimestamp.IsZero() {
			byPhase[b.Status.Phase] = append(byPhase[b.Status.Phase], b)
		}
	}
	return byPhase
}

// storedBackups are the names of the base backups with a manifest in the
// server's bucket under prefix.
func storedBackups(server *s3server.Server, prefix string) []string {
	entries, _ := os.ReadDir(filepath.Join(server.Dir, "backups", prefix, "base"))
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(server.Dir, "backups", prefix, "base", e.Name(), "manifest.json")); err == nil {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestBackupsAndPointInTimeRestore runs backups of a two-pod Database of
// each engine on the real node into a real S3 server: a schedule every
// 15 s (a seconds field first) takes backups (from the replica) while the
// primary archives its WAL or binary logs;
// retention keeps 2; status.backup and the BackupSucceeded and
// ContinuousArchiving conditions report success, and failure while the
// server is down (with a Warning Event), and success again once it is
// back; an on-demand DatabaseBackup completes; a Database restored from it
// to an instant between two batches serves exactly the rows of that instant
// through its -rw Service, and one restored to the end of the archive
// serves every row; deleting the DatabaseBackup (Retain) keeps its
// artifacts.
func TestBackupsAndPointInTimeRestore(t *testing.T) {
	t.Parallel()
	waitForLateTool(t, "versitygw")
	holdNodeCPUAndMore(t, 1000) // two small pods; each restored one asks for its own
	for _, tc := range replicationEngines {
		t.Run(string(tc.engine), func(t *testing.T) { testBackupsAndPointInTimeRestore(t, tc) })
	}
}

func testBackupsAndPointInTimeRestore(t *testing.T, tc replicationSQL) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "real-backup-" + string(tc.engine)
	restrictedNamespace(t, ns)
	server := startS3(t, g, ns)
	db := twoPodDatabase(t, g, ns, tc, tc.create, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Backup = &dbpilotv1alpha1.BackupSpec{Schedule: "*/15 * * * * *", Retention: 2,
			Destination: &dbpilotv1alpha1.BackupDestination{S3: &dbpilotv1alpha1.S3Destination{
				Endpoint: server.Endpoint, Bucket: "backups", CredentialsSecretName: "s3-credentials"}}}
	})
	prefix := ns + "/orders"

	// Scheduled backups complete, from the replica, and retention keeps 2
	// of them (in the store too).
	g.Eventually(func(g Gomega) {
		completed := backupsOf(g, db)[dbpilotv1alpha1.BackupPhaseCompleted]
		g.Expect(len(completed)).To(BeNumerically(">=", 2))
		for _, b := range completed {
			g.Expect(b.Status.Instance).To(Equal("orders-1"), "backups are taken from the caught-up replica")
			g.Expect(b.Status.Checksum).To(HavePrefix("sha256:"))
		}
	}, 4*time.Minute, 2*time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.Backup).NotTo(BeNil())
		g.Expect(db.Status.Backup.LastSuccessful).NotTo(BeNil())
		g.Expect(db.Status.Backup.NextScheduleTime.Time).To(BeTemporally(">", time.Now().Add(-5*time.Second)))
		g.Expect(db.Status.Backup.FirstRecoverabilityPoint).NotTo(BeNil())
		g.Expect(meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionBackupSucceeded)).To(BeTrue())
		g.Expect(meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionContinuousArchiving)).To(BeTrue(),
			"%+v", meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionContinuousArchiving))
	}, 2*time.Minute, 2*time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		completed := backupsOf(g, db)[dbpilotv1alpha1.BackupPhaseCompleted]
		g.Expect(completed).To(HaveLen(2), "retention keeps 2")
		g.Expect(storedBackups(server, prefix)).To(HaveLen(2), "pruned backups leave the store")
	}, 3*time.Minute, 2*time.Second).Should(Succeed())
	// A backup every 15 s can complete between reading the status and the
	// series, so both are read again until one pass sees the same backup.
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(lastBackupMetric(g, db)).To(BeNumerically("~", db.Status.Backup.LastSuccessfulTime.Unix(), 1),
			"dbpilot_backup_last_success_timestamp_seconds follows status.backup")
	}, 30*time.Second, time.Second).Should(Succeed())
	t.Logf("status.backup: last %s (%s, %ds), window %s .. %s, WAL %s", db.Status.Backup.LastSuccessful.Name, db.Status.Backup.LastSuccessful.Size,
		db.Status.Backup.LastSuccessful.DurationSeconds, db.Status.Backup.FirstRecoverabilityPoint, db.Status.Backup.LastRecoverabilityPoint,
		db.Status.Backup.WALArchive.LastArchivedWAL)

	// With the store down, the next backup fails, and says so.
	server.Stop()
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		cond := meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionBackupSucceeded)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(db.Status.Backup.LastFailed).NotTo(BeNil())
		g.Expect(eventNote(g, ns, dbpilotv1alpha1.EventReasonBackupFailed)).NotTo(BeEmpty())
	}, 3*time.Minute, 2*time.Second).Should(Succeed())
	t.Logf("while the store is down: %s", meta.FindStatusCondition(db.Status.Conditions, dbpilotv1alpha1.ConditionBackupSucceeded).Message)
	server = restartS3(g, server)
	t.Cleanup(func() { server.Stop() })
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(db.Status.Conditions, dbpilotv1alpha1.ConditionBackupSucceeded)).To(BeTrue())
	}, 3*time.Minute, 2*time.Second).Should(Succeed())

	// Stop the schedule, back up on demand, and note an instant between two
	// batches of rows.
	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Backup.Schedule = "0 0 1 1 *" })
	manual := &dbpilotv1alpha1.DatabaseBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manual"},
		Spec: dbpilotv1alpha1.DatabaseBackupSpec{DatabaseName: "orders"}}
	g.Eventually(func() error { return k8sClient.Create(ctx, manual) }, time.Minute, time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(manual), manual)).To(Succeed())
		g.Expect(manual.Status.Phase).To(Equal(dbpilotv1alpha1.BackupPhaseCompleted), manual.Status.Message)
	}, 3*time.Minute, time.Second).Should(Succeed())
	// The DatabaseBackup controller's passes are timed under its own name.
	g.Expect(value(operatorFamilies(g), "dbpilot_reconcile_duration_seconds", map[string]string{"controller": "databasebackup", "result": "requeue"})).
		To(BeNumerically(">", 0), "the DatabaseBackup controller's passes while the backup ran")
	instant, sumAtInstant, sumAtEnd := batchesAround(t, g, db, tc)

	// Restored to the instant, a new Database serves the rows of then; to
	// the end of the archive, every row.
	restoreAndExpect(t, g, db, tc, "orders-pitr", &dbpilotv1alpha1.FromBackup{DatabaseBackupName: "manual", TargetTime: &metav1.Time{Time: instant}}, sumAtInstant)
	restoreAndExpect(t, g, db, tc, "orders-copy", &dbpilotv1alpha1.FromBackup{DatabaseBackupName: "manual"}, sumAtEnd)
	t.Logf("restored: sum %d at %s, %d at the end", sumAtInstant, instant.Format(time.RFC3339), sumAtEnd)

	// Deleting the on-demand backup keeps its artifacts (Retain).
	g.Expect(k8sClient.Delete(ctx, manual)).To(Succeed())
	g.Eventually(func() error { return k8sClient.Get(ctx, client.ObjectKeyFromObject(manual), manual) }, time.Minute, time.Second).
		Should(MatchError(ContainSubstring("not found")))
	g.Expect(storedBackups(server, prefix)).To(ContainElement(HavePrefix("manual-")))

	// Backups, a failing store and restores wrote no secret: neither the
	// Database's nor the store's.
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
	expectNoInternalPasswords(g, db, server.SecretKey)
}

// lastBackupMetric is the in-process operator's
// dbpilot_backup_last_success_timestamp_seconds of db.
func lastBackupMetric(g Gomega, db *dbpilotv1alpha1.Database) float64 {
	return value(operatorFamilies(g), "dbpilot_backup_last_success_timestamp_seconds",
		map[string]string{"namespace": db.Namespace, "database": db.Name, "engine": string(db.Spec.Engine)})
}

// operatorFamilies are the in-process operator's series, by name.
func operatorFamilies(g Gomega) map[string]*dto.MetricFamily {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	return byName
}

// batchesAround writes two batches of rows through -rw with an instant
// between them, then waits until the primary's archive holds the second;
// it returns the instant and the sums at the instant and at the end.
func batchesAround(t *testing.T, g Gomega, db *dbpilotv1alpha1.Database, tc replicationSQL) (time.Time, int, int) {
	ctx := context.Background()
	session, err := connectApp(ctx, db)
	g.Expect(err).NotTo(HaveOccurred())
	defer session.close()
	g.Expect(session.exec(ctx, tc.more)).To(Succeed())
	time.Sleep(2 * time.Second)
	instant := time.Now()
	sumAtInstant, err := session.queryInt(ctx, tc.sum)
	g.Expect(err).NotTo(HaveOccurred())
	time.Sleep(2 * time.Second)
	g.Expect(session.exec(ctx, tc.more3)).To(Succeed())
	sumAtEnd, err := session.queryInt(ctx, tc.sum)
	g.Expect(err).NotTo(HaveOccurred())
	committed := time.Now()
	// The log of the last batch reaches the store within the archive
	// timeout (60 s). The status keeps whole seconds: a log archived in
	// the second of the commit may hold it or not, so such a time counts
	// only once no later archive follows within the archive timeout.
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.Backup.WALArchive).NotTo(BeNil())
		g.Expect(db.Status.Backup.WALArchive.LastArchivedTime).NotTo(BeNil())
		archived, second := db.Status.Backup.WALArchive.LastArchivedTime.Time, committed.Truncate(time.Second)
		g.Expect(archived.After(second) || archived.Equal(second) && time.Since(committed) > 90*time.Second).To(BeTrue(),
			"last archived at %s, committed at %s", archived, committed)
	}, 3*time.Minute, time.Second).Should(Succeed())
	t.Logf("%s: commit to archived log: %.1fs", db.Spec.Engine, db.Status.Backup.WALArchive.LastArchivedTime.Sub(committed).Seconds())
	return instant, sumAtInstant, sumAtEnd
}

// restoreAndExpect creates a one-pod Database name restored from the
// backup, expects it to serve the sum through -rw, and deletes it.
func restoreAndExpect(t *testing.T, g Gomega, source *dbpilotv1alpha1.Database, tc replicationSQL, name string, from *dbpilotv1alpha1.FromBackup, sum int) {
	restored := newDatabase(source.Namespace, name, tc.engine, tc.version, 1)
	restored.Spec.Bootstrap = &dbpilotv1alpha1.BootstrapSpec{FromBackup: from}
	restored.Spec.CredentialsSecretName = source.CredentialsSecretName()
	giveBack := moreNodeCPU(t, 500) // one small pod
	g.Expect(k8sClient.Create(context.Background(), restored)).To(Succeed())
	// Deleted even when the test fails, so its pod leaves the node's CPU
	// to the next tests.
	t.Cleanup(func() { deleteAndWait(NewWithT(t), restored) })
	logPodsOnFailure(t, restored)
	waitAvailable(g, restored, 4*time.Minute)
	expectSum(g, restored, tc, sum)
	deleteAndWait(g, restored)
	// Its pod leaves the node before the next restore's comes.
	expectPodsLeave(g, restored.Namespace, restored.SelectorLabels())
	giveBack()
}

// expectSum reads the sum of the orders table through the Database's -rw
// Service.
func expectSum(g Gomega, db *dbpilotv1alpha1.Database, tc replicationSQL, want int) {
	g.Eventually(func(g Gomega) {
		session, err := connectApp(context.Background(), db)
		g.Expect(err).NotTo(HaveOccurred())
		defer session.close()
		sum, err := session.queryInt(context.Background(), tc.sum)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(sum).To(Equal(want))
	}, time.Minute, time.Second).Should(Succeed())
}

// TestBackupToTheClaimDBPilotCreates gives a two-pod MariaDB Database the
// minimal spec.backup, a schedule alone: dbpilot creates the claim the
// backups go to (with no owner), a scheduled backup completes from the
// replica, and a Database restored from it serves its rows through -rw.
func TestBackupToTheClaimDBPilotCreates(t *testing.T) {
	t.Parallel()
	holdNodeCPUAndMore(t, 1000) // two small pods; the restored one asks for its own
	g := NewWithT(t)
	ctx := context.Background()
	ns := "real-backup-claim"
	tc := replicationEngines[1]
	db := twoPodDatabase(t, g, ns, tc, tc.create, func(db *dbpilotv1alpha1.Database) {
		db.Spec.Backup = &dbpilotv1alpha1.BackupSpec{Schedule: "*/15 * * * * *", Retention: 2}
	})
	tableCreated := time.Now()
	claim := &corev1.PersistentVolumeClaim{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: db.BackupClaimName()}, claim)).To(Succeed())
	g.Expect(claim.OwnerReferences).To(BeEmpty(), "deleting the Database never deletes its backups")
	var scheduled dbpilotv1alpha1.DatabaseBackup
	g.Eventually(func(g Gomega) {
		completed := backupsOf(g, db)[dbpilotv1alpha1.BackupPhaseCompleted]
		g.Expect(completed).NotTo(BeEmpty())
		scheduled = completed[len(completed)-1]
		g.Expect(scheduled.Status.StartTime.Time).To(BeTemporally(">", tableCreated), "a backup taken after the table was created")
	}, 3*time.Minute, 2*time.Second).Should(Succeed())
	g.Expect(scheduled.Status.Instance).To(Equal("orders-1"))
	g.Expect(scheduled.Status.Destination.Volume.ClaimName).To(Equal(db.BackupClaimName()))
	t.Logf("scheduled backup %s: %s at GTID %s", scheduled.Name, scheduled.Status.Size, scheduled.Status.EndPosition)
	// No more runs: retention (2) then never deletes the backup restored.
	changeDatabase(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Backup.Schedule = "0 0 1 1 *" })
	session, err := connectApp(ctx, db)
	g.Expect(err).NotTo(HaveOccurred())
	sum, err := session.queryInt(ctx, tc.sum)
	session.close()
	g.Expect(err).NotTo(HaveOccurred())
	restoreAndExpect(t, g, db, tc, "orders-copy", &dbpilotv1alpha1.FromBackup{DatabaseBackupName: scheduled.Name}, sum)
}

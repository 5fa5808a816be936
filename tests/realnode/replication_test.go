package realnode_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// replicationSQL is what the test runs on each engine.
type replicationSQL struct {
	engine    dbpilotv1alpha1.Engine
	version   string
	create    string // a table orders of ids 1..1000
	more      string // ids 1001..2000
	isReplica string // 1 on a read-only replica
	sum       string
}

var replicationEngines = []replicationSQL{
	{
		engine: dbpilotv1alpha1.EnginePostgres, version: "15",
		create:    "CREATE TABLE orders AS SELECT g AS id FROM generate_series(1, 1000) g",
		more:      "INSERT INTO orders SELECT g FROM generate_series(1001, 2000) g",
		isReplica: "SELECT pg_is_in_recovery()::int",
		sum:       "SELECT coalesce(sum(id), 0)::int FROM orders",
	},
	{
		engine: dbpilotv1alpha1.EngineMariaDB, version: "10.11",
		create:    "CREATE TABLE orders (id INT PRIMARY KEY) AS SELECT seq AS id FROM seq_1_to_1000",
		more:      "INSERT INTO orders SELECT seq FROM seq_1001_to_2000",
		isReplica: "SELECT @@read_only",
		sum:       "SELECT CAST(COALESCE(SUM(id), 0) AS SIGNED) FROM orders",
	},
}

// TestReplicasServeReads runs a Database of each engine with a primary and
// a replica on real pods: rows written through the -rw Service are read
// back through the -ro Service from a read-only replica, and scaling to 3
// clones a new replica that catches up.
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
	db := newDatabase(ns, "orders", tc.engine, tc.version, 2)
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	start := time.Now()
	waitReadyPods(g, db, 2)
	t.Logf("%s: primary and replica ready in %.1fs", tc.engine, time.Since(start).Seconds())
	// status.instances tells what the instances report.
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.CurrentPrimary).To(Equal(db.PrimaryPodName()))
		g.Expect(db.Status.Instances).To(ConsistOf(
			dbpilotv1alpha1.InstanceStatus{Name: db.PodName(0), Role: "primary", Ready: true},
			dbpilotv1alpha1.InstanceStatus{Name: db.PodName(1), Role: "replica", Ready: true, Replicating: true},
		))
	}, time.Minute, 500*time.Millisecond).Should(Succeed())

	var writer sqlSession
	g.Eventually(func() (err error) {
		writer, err = connectApp(ctx, db)
		return err
	}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
	defer writer.close()
	g.Expect(writer.exec(ctx, tc.create)).To(Succeed())
	replicaSum := func(g Gomega) int {
		reader, err := connectAppThrough(ctx, db, db.ReadOnlyServiceName())
		g.Expect(err).NotTo(HaveOccurred())
		defer reader.close()
		replica, err := reader.queryInt(ctx, tc.isReplica)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(replica).To(Equal(1), "the -ro Service reaches a read-only replica")
		sum, err := reader.queryInt(ctx, tc.sum)
		g.Expect(err).NotTo(HaveOccurred())
		return sum
	}
	g.Eventually(replicaSum, 30*time.Second, 500*time.Millisecond).Should(Equal(500500), "the replica has the rows")

	g.Eventually(func() error {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(db), db); err != nil {
			return err
		}
		db.Spec.Replicas = ptr.To[int32](3)
		return k8sClient.Update(ctx, db)
	}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
	start = time.Now()
	waitReadyPods(g, db, 3)
	t.Logf("%s: scaled 2 -> 3: the new replica cloned and replicates after %.1fs", tc.engine, time.Since(start).Seconds())
	g.Expect(writer.exec(ctx, tc.more)).To(Succeed())
	for i := range 6 {
		// The -ro Service spreads sessions over both replicas.
		g.Eventually(replicaSum, 30*time.Second, 500*time.Millisecond).Should(Equal(2001000), fmt.Sprintf("read %d", i))
	}

	deleteAndWait(g, db)
}

// waitReadyPods waits until the Database reports n ready pods.
func waitReadyPods(g Gomega, db *dbpilotv1alpha1.Database, n int32) {
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(db), db)).To(Succeed())
		g.Expect(db.Status.ReadyReplicas).To(Equal(n), "ready pods")
		g.Expect(available(db)).To(BeTrue())
	}, 4*time.Minute, 500*time.Millisecond).Should(Succeed())
}

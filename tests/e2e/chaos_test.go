package e2e_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/internal/managerprocess"
)

const (
	// chaosOpsEnv sets the number of lifecycle operations (default 200;
	// make test-chaos runs more).
	chaosOpsEnv = "DBPILOT_CHAOS_OPS"
	// chaosSeedEnv replays a run: its seed is logged.
	chaosSeedEnv = "DBPILOT_CHAOS_SEED"
	// takeoverGoal is the longest a standby manager may take to lead after
	// the leader is killed (the goal): the Lease's 12 s duration,
	// and two of the standby's tries' intervals (its last look at the Lease,
	// then its next try), 1.5 s each and jittered to up to 3.3 s: 18.6 s at
	// the very worst, and slack for a busy machine.
	takeoverGoal = 20 * time.Second
)

// TestChaosManagersKilledAtRandom runs two real manager processes with
// leader election, each behind a proxy that audits its writes, drives a
// workload of lifecycle operations on a set of Databases, and meanwhile
// SIGKILLs a manager at random points (mostly the leader) and restarts it
// at once. At the end every Database converges, with no orphaned or
// duplicated child, every credentials Secret holding the data it had
// (unless the workload rotated it), no volume gone but under
// deletionPolicy Delete, never two managers writing at once, and every
// takeover within takeoverGoal. It prints the chaos line make test-chaos
// reports.
func TestChaosManagersKilledAtRandom(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ops := 200
	if v := os.Getenv(chaosOpsEnv); v != "" {
		n, err := strconv.Atoi(v)
		g.Expect(err).NotTo(HaveOccurred(), chaosOpsEnv)
		ops = n
	}
	seed := seedFrom(t, g, chaosSeedEnv)
	rng := rand.New(rand.NewPCG(seed, 1))

	ns := restrictedNamespace(t, "chaos")
	leases := restrictedNamespace(t, "chaos-leases")
	dir := t.TempDir()
	binary, err := managerprocess.Build(dir)
	g.Expect(err).NotTo(HaveOccurred())
	audit := &writeAudit{}
	var slots []*managerprocess.Slot
	for _, name := range []string{"a", "b"} {
		slot := managerprocess.NewSlot(name, binary, dir,
			"--leader-elect", "--leader-election-namespace="+leases, "--watch-namespaces="+ns,
			"--metrics-bind-address=0", "--health-probe-bind-address=0", "--zap-log-level=info")
		slot.Kubeconfig = startAuditProxy(t, audit, slot.Writer)
		g.Expect(slot.Start()).To(Succeed())
		slots = append(slots, slot)
	}
	w := newChaosWorld(ns, rng)
	t.Cleanup(func() {
		for _, s := range slots {
			s.Kill()
		}
		if t.Failed() {
			t.Logf("the workload:\n%s", strings.Join(w.history, "\n"))
			for _, s := range slots {
				t.Log(s.LogTail(40))
			}
		}
	})

	stopWatching := w.watchClaims()
	stopKilling := make(chan struct{})
	var killer sync.WaitGroup
	killer.Go(func() { w.killAtRandom(t, rand.New(rand.NewPCG(seed, 2)), slots, audit, stopKilling) })

	for done := 0; done < ops; {
		if w.step(g) {
			done++
		}
		w.observeSecrets(g)
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
	}
	close(stopKilling)
	killer.Wait()
	for _, s := range slots {
		if !s.Alive() {
			g.Expect(s.Start()).To(Succeed())
		}
	}

	// Every Database converges once it is unpaused; then nothing is lost.
	for _, db := range w.live() {
		update(g, db, func(db *dbpilotv1alpha1.Database) { db.Spec.Paused = false })
	}
	for _, db := range w.live() {
		waitConvergedWithin(g, db, 5*time.Minute)
	}
	w.observeSecrets(g)
	stopWatching()
	lostClaims := w.lostClaims(g)
	lostSecrets := w.lostSecrets(g)
	var orphans []string
	g.Eventually(func(g Gomega) {
		orphans = w.orphans(g)
		g.Expect(orphans).To(BeEmpty())
	}, 2*time.Minute, time.Second).Should(Succeed(), "children without a live owner or duplicated: %v", orphans)
	g.Expect(lostClaims).To(BeEmpty(), "volumes deleted without deletionPolicy Delete")
	g.Expect(lostSecrets).To(BeEmpty(), "credentials changed without a rotation")

	overlaps := bothWrote(audit.all(), slots)
	g.Expect(overlaps).To(BeEmpty(), "two managers wrote at once")
	// The last kill may have come moments before the workload ended: its
	// standby may still be waiting for the Lease to expire.
	var takeovers []time.Duration
	g.Eventually(func() int {
		var missing int
		takeovers, missing = w.takeovers(audit.all())
		return missing
	}, takeoverGoal+10*time.Second, time.Second).Should(BeZero(), "leader kills no other manager took over from")
	g.Expect(takeovers).NotTo(BeEmpty(), "no takeover measured")
	for _, d := range takeovers {
		g.Expect(d).To(BeNumerically("<=", takeoverGoal), "takeovers: %v", takeovers)
	}
	exits := 0
	for _, s := range slots {
		exits += s.SelfExits()
	}
	t.Logf("%d kills, uninterrupted takeovers %v, %d managers exited on their own, %d writes audited", len(w.kills), takeovers, exits, len(audit.all()))
	fmt.Printf("chaos ops=%d kills=%d converged=yes lost_secrets=%d lost_pvcs=%d orphans=%d lost_rows=n/a failover_seconds=%.1f\n",
		ops, len(w.kills), len(lostSecrets), len(lostClaims), len(orphans), slices.Max(append(takeovers, 0)).Seconds())
}

// bothWrote lists the writes a manager made while another manager, which
// wrote before it, was still running: the moments two leaders wrote.
func bothWrote(writes []auditedWrite, slots []*managerprocess.Slot) []string {
	var objects []auditedWrite
	for _, w := range writes {
		if !w.isLease() {
			objects = append(objects, w)
		}
	}
	sort.SliceStable(objects, func(i, j int) bool { return objects[i].at.Before(objects[j].at) })
	died := func(writer string) (time.Time, bool) {
		for _, s := range slots {
			if at, ok := s.Death(writer); ok {
				return at, true
			}
		}
		return time.Time{}, false
	}
	var overlaps []string
	for i := 1; i < len(objects); i++ {
		prev, next := objects[i-1], objects[i]
		if prev.writer == next.writer {
			continue
		}
		if at, ok := died(prev.writer); !ok || !at.Before(next.at) {
			overlaps = append(overlaps, fmt.Sprintf("%s %s %s at %s, then %s %s %s at %s",
				prev.writer, prev.method, prev.path, prev.at.Format(time.StampMilli), next.writer, next.method, next.path, next.at.Format(time.StampMilli)))
		}
	}
	return overlaps
}

// chaosWorld is the workload's model of what it asked for: which Databases
// exist, with what deletion policy, and what credentials and volumes they
// must keep.
type chaosWorld struct {
	ns  string
	rng *rand.Rand
	dbs []*chaosDatabase

	mu     sync.Mutex
	claims map[types.UID]*seenClaim
	// kills are the managers killed, in order.
	kills []managerKill
	// history says what the workload did, for a failure's report.
	history []string
}

// note adds a line to the history.
func (w *chaosWorld) note(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.history = append(w.history, time.Now().Format(time.StampMilli)+" "+fmt.Sprintf(format, args...))
}

type chaosDatabase struct {
	name    string
	engine  dbpilotv1alpha1.Engine
	obj     *dbpilotv1alpha1.Database // nil when deleted
	policy  dbpilotv1alpha1.DeletionPolicy
	patch   int
	created int // incarnation: how many times it was created
	// deletedWithDelete lists the incarnations deleted under
	// deletionPolicy Delete, whose volumes may go.
	deletedWithDelete map[int]bool
	// secrets holds the data of each Secret dbpilot generated for it, as
	// first seen; rotated, the UID of the credentials Secret the workload
	// deleted, until its successor is seen.
	secrets    map[string]*corev1.Secret
	rotatedUID types.UID
}

type seenClaim struct {
	name, database string
	incarnation    int
}

// managerKill is one SIGKILL: which writer, when, and whether it led.
type managerKill struct {
	writer string
	at     time.Time
	leader bool
}

func newChaosWorld(ns string, rng *rand.Rand) *chaosWorld {
	w := &chaosWorld{ns: ns, rng: rng, claims: map[types.UID]*seenClaim{}}
	engines := []dbpilotv1alpha1.Engine{dbpilotv1alpha1.EnginePostgres, dbpilotv1alpha1.EngineMySQL, dbpilotv1alpha1.EngineMariaDB}
	for i := range 6 {
		w.dbs = append(w.dbs, &chaosDatabase{name: fmt.Sprintf("db%d", i), engine: engines[i%3],
			deletedWithDelete: map[int]bool{}, secrets: map[string]*corev1.Secret{}})
	}
	return w
}

// live returns the Databases the workload created and did not delete.
func (w *chaosWorld) live() []*dbpilotv1alpha1.Database {
	var out []*dbpilotv1alpha1.Database
	for _, d := range w.dbs {
		if d.obj != nil {
			out = append(out, d.obj)
		}
	}
	return out
}

// minorVersion is the engine's default major at a patch level.
func minorVersion(engine dbpilotv1alpha1.Engine, patch int) string {
	switch engine {
	case dbpilotv1alpha1.EnginePostgres:
		return fmt.Sprintf("16.%d", patch)
	case dbpilotv1alpha1.EngineMySQL:
		return fmt.Sprintf("8.4.%d", patch)
	default:
		return fmt.Sprintf("11.4.%d", patch)
	}
}

// step applies one random lifecycle operation, and reports whether one
// was applied (a Database still going away cannot be created again yet).
func (w *chaosWorld) step(g Gomega) bool {
	ctx := context.Background()
	d := w.dbs[w.rng.IntN(len(w.dbs))]
	if d.obj == nil {
		return w.create(g, d)
	}
	switch op := w.rng.IntN(10); {
	case op < 2:
		update(g, d.obj, func(db *dbpilotv1alpha1.Database) { db.Spec.Replicas = ptr.To(int32(1 + w.rng.IntN(3))) })
	case op < 4:
		tiers := []dbpilotv1alpha1.Tier{dbpilotv1alpha1.TierSmall, dbpilotv1alpha1.TierMedium, dbpilotv1alpha1.TierLarge}
		update(g, d.obj, func(db *dbpilotv1alpha1.Database) { db.Spec.Tier = tiers[w.rng.IntN(len(tiers))] })
	case op < 5:
		d.patch++
		update(g, d.obj, func(db *dbpilotv1alpha1.Database) { db.Spec.Version = minorVersion(d.engine, d.patch) })
	case op < 7:
		update(g, d.obj, func(db *dbpilotv1alpha1.Database) { db.Spec.Paused = !db.Spec.Paused })
	case op < 8:
		secret := &corev1.Secret{}
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: d.obj.CredentialsSecretName()}, secret)
		if isNotFound(err) {
			return false
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, secret))).To(Succeed())
		w.note("%s: credentials Secret deleted (rotation)", d.name)
		delete(d.secrets, secret.Name)
		d.rotatedUID = secret.UID
	default:
		g.Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, d.obj))).To(Succeed())
		w.note("%s: deleted (uid %s, deletionPolicy %s)", d.name, d.obj.UID, d.policy)
		if d.policy == dbpilotv1alpha1.DeletionPolicyDelete {
			w.mu.Lock()
			d.deletedWithDelete[d.created] = true
			w.mu.Unlock()
			clear(d.secrets)
		}
		d.obj = nil
	}
	return true
}

// create makes d anew once its previous incarnation is gone (under
// Delete, its claims with it).
func (w *chaosWorld) create(g Gomega, d *chaosDatabase) bool {
	ctx := context.Background()
	probe := &dbpilotv1alpha1.Database{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: d.name}, probe); !isNotFound(err) {
		return false
	}
	claims := &corev1.PersistentVolumeClaimList{}
	g.Expect(k8sClient.List(ctx, claims, client.InNamespace(w.ns), client.MatchingLabels{dbpilotv1alpha1.LabelDatabase: d.name})).To(Succeed())
	for _, c := range claims.Items {
		if c.DeletionTimestamp != nil {
			return false
		}
	}
	// Secrets and a designation the previous incarnation still owns may
	// linger: the operator waits for the garbage collector.
	db := newDatabase(w.ns, d.name, d.engine)
	db.Spec.Replicas = ptr.To(int32(1 + w.rng.IntN(3)))
	d.patch = 1 + w.rng.IntN(5)
	db.Spec.Version = minorVersion(d.engine, d.patch)
	d.policy = []dbpilotv1alpha1.DeletionPolicy{dbpilotv1alpha1.DeletionPolicyRetain, dbpilotv1alpha1.DeletionPolicyDelete}[w.rng.IntN(2)]
	db.Spec.DeletionPolicy = d.policy
	g.Expect(k8sClient.Create(ctx, db)).To(Succeed())
	w.note("%s: created (uid %s, %d pods, version %s, deletionPolicy %s)", d.name, db.UID, *db.Spec.Replicas, db.Spec.Version, d.policy)
	w.mu.Lock()
	d.created++
	w.mu.Unlock()
	d.obj = db
	return true
}

// observeSecrets notes the data of every generated Secret of a live
// Database the first time it is seen (after a rotation, once its
// successor exists).
func (w *chaosWorld) observeSecrets(g Gomega) {
	for _, d := range w.dbs {
		if d.obj == nil {
			continue
		}
		for _, name := range []string{d.obj.CredentialsSecretName(), d.obj.ReplicationSecretName()} {
			if d.secrets[name] != nil {
				continue
			}
			secret := &corev1.Secret{}
			err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: name}, secret)
			if isNotFound(err) || err == nil && secret.UID == d.rotatedUID {
				continue
			}
			g.Expect(err).NotTo(HaveOccurred())
			if owner := metav1.GetControllerOf(secret); owner != nil && owner.UID != d.obj.UID {
				continue // a deleted incarnation's, about to be collected
			}
			d.secrets[name] = secret
		}
	}
}

// lostSecrets lists the Secrets noted that no longer hold the data they
// held: of a live Database, or one deleted under Retain.
func (w *chaosWorld) lostSecrets(g Gomega) []string {
	var lost []string
	for _, d := range w.dbs {
		for name, seen := range d.secrets {
			secret := &corev1.Secret{}
			err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: w.ns, Name: name}, secret)
			if isNotFound(err) {
				lost = append(lost, name+" deleted")
				continue
			}
			g.Expect(err).NotTo(HaveOccurred())
			for key, value := range seen.Data {
				if string(secret.Data[key]) != string(value) {
					lost = append(lost, name+" key "+key+" changed")
				}
			}
		}
	}
	return lost
}

// watchClaims notes every volume claim in the namespace, polling until
// the returned function is called.
func (w *chaosWorld) watchClaims() func() {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			w.noteClaims()
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return func() { close(stop); <-done; w.noteClaims() }
}

func (w *chaosWorld) noteClaims() {
	claims := &corev1.PersistentVolumeClaimList{}
	if err := k8sClient.List(context.Background(), claims, client.InNamespace(w.ns)); err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range claims.Items {
		if _, seen := w.claims[c.UID]; seen {
			continue
		}
		database := c.Labels[dbpilotv1alpha1.LabelDatabase]
		incarnation := 0
		for _, d := range w.dbs {
			if d.name == database {
				incarnation = d.created
			}
		}
		w.claims[c.UID] = &seenClaim{name: c.Name, database: database, incarnation: incarnation}
	}
}

// lostClaims lists the claims seen that are gone although their
// Database's incarnation was not deleted under deletionPolicy Delete.
func (w *chaosWorld) lostClaims(g Gomega) []string {
	claims := &corev1.PersistentVolumeClaimList{}
	g.Expect(k8sClient.List(context.Background(), claims, client.InNamespace(w.ns))).To(Succeed())
	present := map[types.UID]bool{}
	for _, c := range claims.Items {
		present[c.UID] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var lost []string
	for uid, c := range w.claims {
		if present[uid] {
			continue
		}
		// A claim outlives a deletion under Retain, and the next
		// incarnation adopts it: any later deletion under Delete takes it.
		allowed := false
		for _, d := range w.dbs {
			for incarnation := range d.deletedWithDelete {
				if d.name == c.database && incarnation >= c.incarnation {
					allowed = true
				}
			}
		}
		if !allowed {
			lost = append(lost, fmt.Sprintf("%s (of %s, incarnation %d)", c.name, c.database, c.incarnation))
		}
	}
	return lost
}

// orphans lists dbpilot's objects whose owner Database is gone, objects
// with no owner that no deletion retained, and kinds of child a Database
// has more of than it should.
func (w *chaosWorld) orphans(g Gomega) []string {
	ctx := context.Background()
	databases := &dbpilotv1alpha1.DatabaseList{}
	g.Expect(k8sClient.List(ctx, databases, client.InNamespace(w.ns))).To(Succeed())
	uids := map[types.UID]bool{}
	for _, db := range databases.Items {
		uids[db.UID] = true
	}
	var orphans []string
	for kind, list := range map[string]client.ObjectList{
		"StatefulSet": &appsStatefulSetList{}, "Service": &corev1.ServiceList{}, "PodDisruptionBudget": &policyPDBList{},
		"ConfigMap": &corev1.ConfigMapList{}, "Secret": &corev1.SecretList{},
	} {
		g.Expect(k8sClient.List(ctx, list, client.InNamespace(w.ns),
			client.MatchingLabels{dbpilotv1alpha1.LabelManagedBy: dbpilotv1alpha1.ManagedByValue})).To(Succeed())
		items, err := metaItems(list)
		g.Expect(err).NotTo(HaveOccurred())
		perOwner := map[string]int{}
		for _, obj := range items {
			owners := obj.GetOwnerReferences()
			switch {
			case len(owners) == 0 && obj.GetName() == dbpilotv1alpha1.MetricsSecretName:
			case len(owners) == 0 && obj.GetLabels()[dbpilotv1alpha1.LabelRetainedFrom] != "":
			case len(owners) == 0:
				orphans = append(orphans, kind+" "+obj.GetName()+" has no owner")
			}
			for _, ref := range owners {
				if !uids[ref.UID] {
					orphans = append(orphans, fmt.Sprintf("%s %s of a deleted Database (owner %s %s, created %s, labels %v)",
						kind, obj.GetName(), ref.Name, ref.UID, obj.GetCreationTimestamp().Format(time.StampMilli), obj.GetLabels()))
				}
				perOwner[string(ref.UID)]++
			}
		}
		// One StatefulSet; two budgets at most (the replicas' and the
		// primary's).
		if most, ok := map[string]int{"StatefulSet": 1, "PodDisruptionBudget": 2}[kind]; ok {
			for owner, n := range perOwner {
				if n > most {
					orphans = append(orphans, fmt.Sprintf("%d of kind %s for %s", n, kind, owner))
				}
			}
		}
	}
	return orphans
}

// killAtRandom kills a manager every 2 to 10 s while one leads, until
// stop closes: the leader three times in four, the standby otherwise, and
// restarts it at once. While no one leads (a takeover under way) it waits,
// so every takeover is measured whole.
func (w *chaosWorld) killAtRandom(t *testing.T, rng *rand.Rand, slots []*managerprocess.Slot, audit *writeAudit, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(2000+rng.IntN(8000)) * time.Millisecond):
		}
		leader := leaderOf(slots, audit.all())
		if leader == nil {
			continue // no one leads yet: a takeover is under way
		}
		victim := slots[rng.IntN(len(slots))]
		if rng.IntN(4) > 0 {
			victim = leader
		}
		writer, at := victim.Kill()
		w.note("killed %s (leader: %t)", writer, victim == leader)
		w.mu.Lock()
		w.kills = append(w.kills, managerKill{writer: writer, at: at, leader: victim == leader})
		w.mu.Unlock()
		if err := victim.Start(); err != nil {
			t.Errorf("restarting manager %s: %v", victim.Name(), err)
			return
		}
	}
}

// leaderOf is the slot whose running process renewed the Lease last, in
// the last five seconds (the Lease is renewed every two).
func leaderOf(slots []*managerprocess.Slot, writes []auditedWrite) *managerprocess.Slot {
	for i := len(writes) - 1; i >= 0; i-- {
		w := writes[i]
		if !w.isLease() || !w.succeeded() {
			continue
		}
		if time.Since(w.at) > 5*time.Second {
			return nil
		}
		for _, s := range slots {
			if s.Writer() == w.writer && s.Alive() {
				return s
			}
		}
		return nil
	}
	return nil
}

// takeovers measures, for every leader kill, the time until another
// process wrote the Lease, and counts the kills no one took over from. A
// takeover another kill interrupted (the standby killed while it waited
// for the Lease to expire) measures the kills, not the election: it is
// left out.
func (w *chaosWorld) takeovers(writes []auditedWrite) ([]time.Duration, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Duration
	missing := 0
	for i, k := range w.kills {
		if !k.leader {
			continue
		}
		var took *auditedWrite
		for _, wr := range writes {
			if wr.isLease() && wr.succeeded() && wr.writer != k.writer && wr.at.After(k.at) {
				took = &wr
				break
			}
		}
		switch {
		case took == nil:
			missing++
		case i+1 < len(w.kills) && w.kills[i+1].at.Before(took.at):
		default:
			out = append(out, took.at.Sub(k.at).Round(100*time.Millisecond))
		}
	}
	return out, missing
}

// seedFrom is the seed a random test replays from env, or the clock's;
// it is logged either way.
func seedFrom(t *testing.T, g Gomega, env string) uint64 {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(env); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		g.Expect(err).NotTo(HaveOccurred(), env)
		seed = n
	}
	t.Logf("%s=%d", env, seed)
	return seed
}
